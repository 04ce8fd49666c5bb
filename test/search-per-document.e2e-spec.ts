import { createDataset, ingest } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

interface Result {
  chunk_id: string;
  document_id: string;
  score: number;
}

/** A paragraph about the harbour that fills a chunk of its own at the suite's chunk size. */
const paragraph = (i: number) =>
  `Harbour note ${i}: the harbour pilot boards every ship at the outer harbour buoy, ` +
  `and no ship enters the harbour without the pilot on its bridge, whatever the weather.`;

describe('max_per_document: at most N results of one document', () => {
  let t: TestApp;
  let openai: FakeOpenAI;
  let key: CreatedKey;
  let datasetId: string;
  let long: string;
  let short: string[];

  beforeAll(async () => {
    openai = await startFakeOpenAI();
    t = await startTestApp({ ...openAiEnv(openai), CHUNK_TOKENS: '64', CHUNK_OVERLAP_TOKENS: '0' });
    key = await t.createApiKey('per-document');
    datasetId = await createDataset(t.http, key);
    // One long document whose twenty chunks all match, and five short ones that match once each.
    [long, ...short] = await ingest(t, key, datasetId, [
      { content: Array.from({ length: 20 }, (_, i) => paragraph(i)).join('\n\n') },
      ...Array.from({ length: 5 }, (_, i) => ({ content: `A harbour in town ${i} has a pilot.` })),
    ]);
  });
  afterAll(async () => {
    await t?.close();
    await openai?.close();
  });

  const search = async (body: object): Promise<Result[]> => {
    const response = await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, query: 'harbour pilot', limit: 10, ...body })
      .expect(200);
    return response.body.results as Result[];
  };
  const perDocument = (results: Result[]) => {
    const counts = new Map<string, number>();
    for (const { document_id } of results) counts.set(document_id, (counts.get(document_id) ?? 0) + 1);
    return counts;
  };

  it.each(['keyword', 'semantic', 'hybrid'])(
    'keeps the best chunks of each document, in the order of the unbounded ranking (%s)',
    async (mode) => {
      const unbounded = await search({ mode, limit: 50 });
      for (const most of [1, 2]) {
        const bounded = await search({ mode, max_per_document: most });
        const counts = perDocument(bounded);
        expect(Math.max(...counts.values())).toBe(most);
        // Each document's best `most`, in the unbounded order: the unbounded ranking with the rest left out.
        const taken = new Map<string, number>();
        const expected = unbounded
          .filter(({ document_id }) => {
            const n = taken.get(document_id) ?? 0;
            taken.set(document_id, n + 1);
            return n < most;
          })
          .slice(0, 10);
        expect(bounded.map((result) => result.chunk_id)).toEqual(expected.map((result) => result.chunk_id));
        expect(new Set(bounded.map((result) => result.document_id))).toEqual(new Set([long, ...short]));
      }
      // Unbounded, the long document fills most of the first ten.
      expect(perDocument(await search({ mode })).get(long)).toBeGreaterThan(2);
    },
  );

  it('applies to each query of a batch, and refuses a bound outside 1-50', async () => {
    const response = await t.http
      .post('/v1/mcp/batch-query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, queries: ['harbour pilot', 'ship weather'], max_per_document: 1 })
      .expect(200);
    for (const { results } of response.body.results as { results: Result[] }[]) {
      expect(Math.max(...perDocument(results).values())).toBe(1);
    }
    for (const bad of [0, 51, 1.5, '1']) {
      const refused = await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, query: 'harbour', max_per_document: bad })
        .expect(400);
      expect(refused.body).toMatchObject({
        code: 'validation_error',
        details: { field: 'max_per_document' },
      });
    }
  });
});
