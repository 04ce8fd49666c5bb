import { createDataset, ingest, waitForDocument } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

interface Result {
  content: string;
  score: number;
  score_basis?: string;
  fusion_score?: number;
  keyword_score?: number;
  keyword_ceiling?: number;
  keyword_relevance?: number;
  keyword_terms?: number;
  semantic_score?: number;
  semantic_relevance?: number;
}

/** A paper's passages and an OCR test page: the dataset the score guide is tried on. */
const PAPER = [
  'Mitochondria produce most of the energy of the cell by oxidative phosphorylation.',
  'The electron transport chain pumps protons across the inner mitochondrial membrane.',
  'ATP synthase uses the proton gradient to make ATP from ADP and phosphate.',
  'Mitochondrial DNA is inherited from the mother and encodes thirteen proteins.',
  'Cells with damaged mitochondria switch to glycolysis and produce lactate.',
  'This is a test page for optical character recognition with some text on it.',
];

describe('The score, keyword leg', () => {
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;

  beforeAll(async () => {
    t = await startTestApp({ EMBEDDING_PROVIDER: 'none' });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    await ingest(
      t,
      key,
      datasetId,
      PAPER.map((content) => ({ content })),
    );
  });
  afterAll(() => t.close());

  const search = async (query: string, body: object = {}): Promise<Result[]> =>
    (
      await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, query, explain: true, limit: 10, ...body })
        .expect(200)
    ).body.results as Result[];

  it('scores a query with one frequent word in common weak, and one the passage answers at least moderate', async () => {
    const offTopic = await search('banana smoothie recipe with text');
    expect(offTopic[0].content).toBe(PAPER[5]);
    expect(offTopic[0].score).toBeLessThan(0.5);
    const fiction = await search('The old prince received his daughter in the cold drawing room');
    expect(fiction.length === 0 || fiction[0].score < 0.5).toBe(true);

    const strong = await search('how do mitochondria produce energy');
    expect(strong[0].content).toBe(PAPER[0]);
    expect(strong[0].score).toBeGreaterThanOrEqual(0.5);
  });

  it("explains the score: BM25 against the query's ceiling, with the idf of a term no chunk holds", async () => {
    const query = 'mitochondria energy zeppelin';
    const [first, ...rest] = await search(query);
    // Each query lexeme's df among the 6 chunks: "zeppelin" is in none.
    const { rows } = await t.sql.query<{ term: string; df: number }>(
      `SELECT q.term, coalesce(t.df, 0)::int AS df
         FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS q(term)
         LEFT JOIN term_stats t ON t.term = q.term
               AND t.dataset_seq = (SELECT seq FROM datasets WHERE id = $2)
        ORDER BY q.term`,
      [query, datasetId],
    );
    expect(rows.map(({ term, df }) => [term, df > 0])).toEqual([
      ['energi', true],
      ['mitochondria', true],
      ['zeppelin', false],
    ]);
    const idf = (df: number) => Math.log(1 + (6 - df + 0.5) / (df + 0.5));
    const ceiling = rows.reduce((sum, { df }) => sum + idf(df), 0) * 2.2;
    expect(first).toMatchObject({ content: PAPER[0], score_basis: 'keyword', keyword_terms: 3 });
    expect(first.keyword_ceiling).toBeCloseTo(ceiling, 5);
    expect(first.keyword_score! / first.keyword_ceiling!).toBeLessThan(1);
    // The first result's score is its relevance; the others' are weighed by their ratio to it.
    expect(first.score).toBe(first.keyword_relevance);
    for (const r of rest)
      expect(r.score).toBeCloseTo(
        r.keyword_relevance! * (r.keyword_relevance! / first.keyword_relevance!),
        5,
      );
    expect(rest.length).toBeGreaterThan(0);
  });

  it('leaves out results below min_score, keeping one equal to it', async () => {
    const all = await search('mitochondrial proteins and ATP in cells');
    expect(all.length).toBeGreaterThanOrEqual(3);
    const scores = all.map((r) => r.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(await search('mitochondrial proteins and ATP in cells', { min_score: 0 })).toEqual(all);
    const kept = await search('mitochondrial proteins and ATP in cells', { min_score: all[1].score });
    expect(kept.map((r) => r.content)).toEqual(
      all.filter((r) => r.score >= all[1].score).map((r) => r.content),
    );
    expect(await search('mitochondrial proteins and ATP in cells', { min_score: 1 })).toEqual([]);

    // A batch applies it to each query: the same results as each query alone, filtered.
    const other = await search('mitochondria and cells');
    const batch = await t.http
      .post('/v1/mcp/batch-query')
      .set(bearer(key))
      .send({
        dataset_id: datasetId,
        queries: ['mitochondrial proteins and ATP in cells', 'mitochondria and cells'],
        min_score: all[1].score,
      })
      .expect(200);
    const answers = batch.body.results as { results: Result[] }[];
    expect(answers.map((answer) => answer.results.map((r) => r.content))).toEqual([
      kept.map((r) => r.content),
      other.filter((r) => r.score >= all[1].score).map((r) => r.content),
    ]);
  });

  it.each([
    ['below 0', -0.01],
    ['above 1', 1.01],
    ['a string', '0.5'],
    ['null', null],
  ])('refuses a min_score %s with 400 validation_error naming it', async (_, minScore) => {
    const response = await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, query: 'cell', min_score: minScore })
      .expect(400);
    expect(response.body.code).toBe('validation_error');
    expect(JSON.stringify(response.body.details)).toContain('min_score');
  });
});

describe('The score, with controlled vectors', () => {
  let openai: FakeOpenAI;
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;
  const QUERY = 'solar panel efficiency';
  /** A unit vector at cosine `c` to the query's. */
  const at = (c: number) => [c, Math.sqrt(1 - c * c), 0, 0];
  const docs = {
    close: 'Photovoltaic modules convert more sunlight each year.',
    related: 'Solar rooftop installations in cloudy countries.',
    distant: 'Wind turbines spin in the North Sea.',
    keyword: 'Solar panel efficiency: solar panel efficiency tables for every panel.',
  };

  beforeAll(async () => {
    openai = await startFakeOpenAI(4);
    openai.vectors.set(QUERY, [1, 0, 0, 0]);
    openai.vectors.set(docs.close, at(0.8));
    openai.vectors.set(docs.related, at(0.6));
    openai.vectors.set(docs.distant, at(0.3));
    openai.vectors.set(docs.keyword, [0, 0, 1, 0]);
    t = await startTestApp({
      ...openAiEnv(openai),
      SEMANTIC_CALIBRATION: JSON.stringify({
        'fake-embedder': [
          [0, 0],
          [0.6, 0.5],
          [0.9, 0.9],
          [1, 1],
        ],
      }),
    });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    await ingest(
      t,
      key,
      datasetId,
      Object.values(docs).map((content) => ({ content })),
    );
  });
  afterAll(async () => {
    await t.close();
    await openai.close();
  });

  const search = async (body: object): Promise<Result[]> =>
    (
      await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, query: QUERY, explain: true, limit: 10, ...body })
        .expect(200)
    ).body.results as Result[];

  it("maps cosine similarity onto the scale through the model's configured points", async () => {
    const results = await search({ mode: 'semantic' });
    expect(results.map((r) => r.content)).toEqual([docs.close, docs.related, docs.distant, docs.keyword]);
    const best = 0.5 + (0.4 * 0.2) / 0.3;
    [
      [0.8, best],
      [0.6, 0.5],
      [0.3, 0.25],
      [0, 0],
    ].forEach(([cosine, relevance], i) => {
      expect(results[i]).toMatchObject({ score_basis: 'semantic' });
      expect(results[i].semantic_score).toBeCloseTo(cosine, 5);
      expect(results[i].semantic_relevance).toBeCloseTo(relevance, 5);
      // Each relevance is weighed by its ratio to the best one's.
      expect(results[i].score).toBeCloseTo(relevance * (relevance / best), 5);
    });
  });

  it('scores an off-topic query weak in every mode', async () => {
    // Cosines of 0.2-0.32 to the documents: related only as unrelated texts are.
    const norm = Math.hypot(0.1, 0.3, 0.2, 0.93);
    openai.vectors.set('a recipe for panel cheese', [0.1 / norm, 0.3 / norm, 0.2 / norm, 0.93 / norm]);
    for (const mode of ['semantic', 'keyword', 'hybrid']) {
      const results = await search({ query: 'a recipe for panel cheese', mode });
      expect([mode, results.length > 0]).toEqual([mode, true]);
      expect([mode, results[0].score < 0.5]).toEqual([mode, true]);
    }
  });

  it('gives a hybrid result ranked above a stronger one that stronger score, and never a rising score', async () => {
    const results = await search({ weights: { keyword: 0.8, semantic: 0.2 } });
    // Leaning on the keyword leg, its first comes first, above `close`, which the keyword leg did not
    // find but which is the stronger by its own evidence (cosine 0.8, against a keyword-stuffed page).
    expect(results.map((r) => r.content)).toEqual([docs.keyword, docs.close, docs.related, docs.distant]);
    const own = (r: Result) => Math.max(r.keyword_relevance ?? 0, r.semantic_relevance ?? 0);
    expect(results[0]).toMatchObject({ score_basis: 'result_below' });
    expect(own(results[0])).toBeLessThan(results[0].score);
    expect(results[0].score).toBe(Math.max(...results.slice(1).map(own)));
    expect(results[1]).toMatchObject({ score_basis: 'semantic', score: results[1].semantic_relevance });
    const scores = results.map((r) => r.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    // With min_score, what is kept is the list's prefix.
    const kept = await search({ weights: { keyword: 0.8, semantic: 0.2 }, min_score: results[2].score });
    expect(kept.map((r) => r.content)).toEqual(
      results.filter((r) => r.score >= results[2].score).map((r) => r.content),
    );
    expect(kept.length).toBeGreaterThanOrEqual(3);
  });
});

describe("A chunk's context", () => {
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;
  const GUIDE = [
    '# Kestrel router',
    'Kestrel is a small router for homes and offices.',
    '## Firmware',
    'Updates arrive every month. Download them from the vendor site and apply them from the admin page.',
    'Keep the power on while an update runs, or the device may stop answering.',
    '## Warranty',
    'Two years from purchase, for defects of materials and workmanship, with the receipt.',
  ].join('\n\n');

  beforeAll(async () => {
    // Small chunks, so that the guide's sections fall into chunks of their own.
    t = await startTestApp({ EMBEDDING_PROVIDER: 'none', CHUNK_TOKENS: '32', CHUNK_OVERLAP_TOKENS: '0' });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    const upload = await t.http
      .post(`/v1/datasets/${datasetId}/documents`)
      .set(bearer(key))
      .attach('file', Buffer.from(GUIDE), 'osprey-manual.md')
      .expect(201);
    await waitForDocument(t.http, key, datasetId, upload.body.document_id as string);
    const paper = await t.http
      .post(`/v1/datasets/${datasetId}/documents`)
      .set(bearer(key))
      .send({
        content: 'The shells thin as the water warms.',
        metadata: { title: 'Ocean acidification and molluscs' },
      })
      .expect(201);
    await waitForDocument(t.http, key, datasetId, paper.body.document_id as string);
  });
  afterAll(() => t.close());

  const search = async (query: string): Promise<Result[]> =>
    (
      await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, query, limit: 10 })
        .expect(200)
    ).body.results as Result[];

  it("finds a passage by its document's title, returning the passage as written", async () => {
    const [found] = await search('acidification');
    expect(found.content).toBe('The shells thin as the water warms.');
  });

  it('finds a passage by the headings above it and by its file name, which its content does not hold', async () => {
    const firmware = await search('firmware');
    expect(firmware.some((r) => r.content.includes('Keep the power on'))).toBe(true);
    // The warranty section is not under the firmware heading.
    expect(firmware.some((r) => r.content.includes('receipt'))).toBe(false);
    const byName = await search('osprey');
    expect(byName.length).toBeGreaterThan(2);
    for (const r of byName) expect(r.content.toLowerCase()).not.toContain('osprey');
  });
});
