import { readFileSync } from 'node:fs';
import { createDataset, ingest } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI, unitVector } from './utils/fake-openai.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

interface Result {
  content: string;
  fusion_score?: number;
  fusion_weights?: { keyword: number; semantic: number };
  fusion_weights_source?: string;
  keyword_score?: number;
  keyword_rank?: number;
  semantic_score?: number;
  semantic_rank?: number;
}

/** `read()`'s first value that `done` accepts, asking every 200 ms for up to a minute. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not reached in time: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('Fusion weights', () => {
  let openai: FakeOpenAI;
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;
  const QUERY = 'solar panel efficiency';
  const docs = {
    keywordOnly: 'Solar panel efficiency solar panel efficiency: a keyword-stuffed page.',
    relevant: 'Panel efficiency of solar cells improved with perovskite layers.',
    semanticOnly: 'Photovoltaic modules convert more sunlight each year.',
    filler: 'Wind turbines spin in the North Sea.',
  };

  beforeAll(async () => {
    openai = await startFakeOpenAI(4);
    openai.vectors.set(QUERY, unitVector([1, 0, 0, 0]));
    openai.vectors.set(docs.semanticOnly, unitVector([1, 0.05, 0, 0]));
    openai.vectors.set(docs.relevant, unitVector([1, 0.3, 0, 0]));
    openai.vectors.set(docs.filler, unitVector([0.5, 1, 0, 0]));
    openai.vectors.set(docs.keywordOnly, unitVector([0, 0, 1, 0]));
    t = await startTestApp(openAiEnv(openai));
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

  const search = (body: object) =>
    t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, query: QUERY, explain: true, limit: 5, ...body });
  const contents = (results: Result[]) => results.map((r) => r.content);

  it("orders by each leg's score over its best, at equal weights for a dataset not judged yet", async () => {
    const results = (await search({}).expect(200)).body.results as Result[];
    const best = (leg: 'keyword' | 'semantic') =>
      results.find((r) => r[`${leg}_rank`] === 1)![`${leg}_score`]!;
    const relevant = results.find((r) => r.content === docs.relevant)!;
    // Found by both legs: each leg's share of its best, weighted half and half.
    expect(relevant.fusion_score).toBeCloseTo(
      0.5 * (relevant.keyword_score! / best('keyword')) + 0.5 * (relevant.semantic_score! / best('semantic')),
      5,
    );
    expect(results[0]).toMatchObject({
      fusion_weights: { keyword: 0.5, semantic: 0.5 },
      fusion_weights_source: 'default',
    });
    const fusion = results.map((r) => r.fusion_score!);
    expect(fusion).toEqual([...fusion].sort((a, b) => b - a));
  });

  it("follows the request's weights, taken in proportion, one left out being 1 minus the other", async () => {
    const keyword = contents((await search({ mode: 'keyword' }).expect(200)).body.results as Result[]);
    const semantic = contents((await search({ mode: 'semantic' }).expect(200)).body.results as Result[]);
    const embedded = openai.requests.length;
    const keywordOnly = (await search({ weights: { keyword: 1, semantic: 0 } }).expect(200)).body
      .results as Result[];
    // Nor is the query embedded for it.
    expect(openai.requests.length).toBe(embedded);
    expect(contents(keywordOnly)).toEqual(keyword);
    expect(keywordOnly[0]).toMatchObject({
      fusion_weights: { keyword: 1, semantic: 0 },
      fusion_weights_source: 'request',
    });
    // A leg of weight 0 does not run: nothing of it in explain.
    expect(keywordOnly.every((r) => r.semantic_rank === undefined)).toBe(true);
    const semanticOnly = (await search({ weights: { semantic: 1 } }).expect(200)).body.results as Result[];
    expect(contents(semanticOnly)).toEqual(semantic);

    const proportional = (await search({ weights: { keyword: 0.2, semantic: 0.6 } }).expect(200)).body
      .results as Result[];
    expect(proportional[0].fusion_weights).toEqual({ keyword: 0.25, semantic: 0.75 });
    const same = (await search({ weights: { keyword: 0.25 } }).expect(200)).body.results as Result[];
    expect(same.map((r) => [r.content, r.fusion_score])).toEqual(
      proportional.map((r) => [r.content, r.fusion_score]),
    );
    // Leaning on the semantic leg brings its first forward; on the keyword leg, the keyword one's.
    expect(contents(proportional)[0]).toBe(docs.semanticOnly);
    // Two equal weights, 0 and 0 among them, are equal shares.
    const none = (await search({ weights: { keyword: 0, semantic: 0 } }).expect(200)).body
      .results as Result[];
    expect(none[0].fusion_weights).toEqual({ keyword: 0.5, semantic: 0.5 });
    const keywordLeaning = (await search({ weights: { keyword: 0.9 } }).expect(200)).body.results as Result[];
    expect(contents(keywordLeaning)[0]).toBe(docs.keywordOnly);
  });

  it.each([
    [{ keyword: 2 }, 'weights.keyword', 'must be a number from 0 to 1'],
    [{ semantic: -0.1 }, 'weights.semantic', 'must be a number from 0 to 1'],
    [{ keyword: '0.5' }, 'weights.keyword', 'must be a number from 0 to 1'],
    [{ bm25: 1 }, 'weights.bm25', 'is not a known field'],
    ['0.5', 'weights', 'must be an object such as {"keyword": 0.7, "semantic": 0.3}'],
    [null, 'weights', 'must be an object such as {"keyword": 0.7, "semantic": 0.3}'],
  ])('refuses weights %j with 400 naming %s', async (weights, field, issue) => {
    const response = await search({ weights }).expect(400);
    expect(response.body).toMatchObject({ code: 'validation_error', details: { field, issue } });
  });

  it('takes the weights for every query of a batch', async () => {
    const response = await t.http
      .post('/v1/mcp/batch-query')
      .set(bearer(key))
      .send({
        dataset_id: datasetId,
        queries: [QUERY, 'wind'],
        weights: { keyword: 1, semantic: 0 },
        explain: true,
      })
      .expect(200);
    const [first] = response.body.results as { results: Result[] }[];
    expect(first.results[0]).toMatchObject({ fusion_weights: { keyword: 1, semantic: 0 } });
  });
});

describe('Fusion weights chosen per dataset', () => {
  let openai: FakeOpenAI;
  let t: TestApp;
  let key: CreatedKey;

  beforeAll(async () => {
    // Vectors drawn from each text's hash: a semantic leg that carries no information at all.
    openai = await startFakeOpenAI(16);
    t = await startTestApp({ ...openAiEnv(openai), FUSION_TUNING_INTERVAL_SECONDS: '1' });
    key = await t.createApiKey();
  });
  afterAll(async () => {
    await t.close();
    await openai.close();
  });

  const abstracts = (from: number, count: number) =>
    readFileSync('../shared/datasets/scifact/corpus.jsonl', 'utf8')
      .split('\n')
      .slice(from, from + count)
      .map((line) => JSON.parse(line) as { title: string; text: string })
      .map((doc) => ({ content: `${doc.title}\n\n${doc.text}`, metadata: { title: doc.title } }));

  const fusionOf = async (datasetId: string) =>
    (await t.http.get(`/v1/datasets/${datasetId}`).set(bearer(key)).expect(200)).body.fusion as {
      weights: { keyword: number; semantic: number };
      source: string;
      chosen_at: string | null;
      pseudo_queries: number | null;
      evidence: {
        chunk_count: number;
        keyword_ndcg_at_10: number;
        semantic_ndcg_at_10: number;
        hybrid_ndcg_at_10: Record<string, number>;
      } | null;
    };

  it('keeps equal weights for a small dataset, and gives a leg without information about no weight', async () => {
    const small = await createDataset(t.http, key);
    await ingest(t, key, small, abstracts(0, 5));
    const datasetId = await createDataset(t.http, key);
    await ingest(t, key, datasetId, abstracts(0, 60));

    const chosen = await eventually(
      () => fusionOf(datasetId),
      (fusion) => fusion.source === 'dataset',
    ).catch((error: Error) => {
      throw new Error(
        `${error.message}\n${t
          .output()
          .split('\n')
          .filter((l) => /fusion|warn|error/i.test(l))
          .slice(-5)
          .join('\n')}`,
      );
    });
    expect(chosen.weights.semantic).toBeLessThanOrEqual(0.1);
    expect(chosen.weights.keyword + chosen.weights.semantic).toBeCloseTo(1, 6);
    expect(chosen.pseudo_queries).toBeGreaterThanOrEqual(25);
    expect(chosen.evidence!.keyword_ndcg_at_10).toBeGreaterThan(chosen.evidence!.semantic_ndcg_at_10 + 0.3);
    expect(Object.keys(chosen.evidence!.hybrid_ndcg_at_10)).toHaveLength(11);
    expect(await fusionOf(small)).toEqual({
      weights: { keyword: 0.5, semantic: 0.5 },
      source: 'default',
      chosen_at: null,
      pseudo_queries: null,
      evidence: null,
    });

    // Searches use the dataset's weights, and say so.
    const response = await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, query: 'cell energy', explain: true })
      .expect(200);
    expect(response.body.results[0]).toMatchObject({
      fusion_weights: chosen.weights,
      fusion_weights_source: 'dataset',
    });
    // An update's answer shows the same choice; a list leaves it out.
    const patched = await t.http
      .patch(`/v1/datasets/${datasetId}`)
      .set(bearer(key))
      .send({ description: 'judged' })
      .expect(200);
    expect(patched.body.fusion).toEqual(chosen);
    const list = await t.http.get('/v1/datasets').set(bearer(key)).expect(200);
    const listed = (list.body.datasets as { id: string }[]).find((d) => d.id === datasetId);
    expect(listed).not.toHaveProperty('fusion');

    // Grown by more than a fifth, the dataset is judged again.
    await ingest(t, key, datasetId, abstracts(60, 20));
    const again = await eventually(
      () => fusionOf(datasetId),
      (fusion) => fusion.chosen_at !== chosen.chosen_at,
    );
    expect(again.evidence!.chunk_count).toBeGreaterThan(chosen.evidence!.chunk_count);
  }, 180_000);
});
