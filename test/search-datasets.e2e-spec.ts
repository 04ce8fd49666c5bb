import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createDataset, ingest } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

interface Result {
  chunk_id: string;
  document_id: string;
  dataset_id?: string;
  score: number;
}

/** Each dataset's results merged as the service merges them: by score, then rank, then dataset. */
function mergedByScore(lists: Result[][], limit: number): Result[] {
  return lists
    .flatMap((results, d) => results.map((result, rank) => ({ result, rank, d })))
    .sort((a, b) => b.result.score - a.result.score || a.rank - b.rank || a.d - b.d)
    .slice(0, limit)
    .map(({ result }) => result);
}

describe('dataset_ids: one search over several datasets', () => {
  let t: TestApp;
  let openai: FakeOpenAI;
  let key: CreatedKey;
  let stranger: CreatedKey;
  let datasets: string[];
  let privateOfStranger: string;
  let publicOfStranger: string;

  beforeAll(async () => {
    openai = await startFakeOpenAI();
    t = await startTestApp({ ...openAiEnv(openai), RATE_LIMIT_API_KEY: '100000' });
    key = await t.createApiKey('datasets-owner');
    stranger = await t.createApiKey('datasets-stranger');
    datasets = [];
    for (const topic of ['tides', 'lighthouses', 'harbours']) {
      const id = await createDataset(t.http, key, { name: topic });
      await ingest(
        t,
        key,
        id,
        Array.from({ length: 4 }, (_, i) => ({
          content: `Note ${i} on ${topic}: the keeper writes the tide and the weather at the ${topic} every hour.`,
        })),
      );
      datasets.push(id);
    }
    privateOfStranger = await createDataset(t.http, stranger, { name: 'private' });
    publicOfStranger = await createDataset(t.http, stranger, { name: 'public', is_public: true });
    await ingest(t, stranger, publicOfStranger, [{ content: 'A public note on the tide at the pier.' }]);
  });
  afterAll(async () => {
    await t?.close();
    await openai?.close();
  });

  const query = (body: object) =>
    t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ query: 'tide weather', ...body });

  it.each(['keyword', 'semantic', 'hybrid'])(
    'merges each dataset’s own results by score, each naming its dataset (%s)',
    async (mode) => {
      const alone = await Promise.all(
        datasets.map(async (id) => {
          const response = await query({ dataset_id: id, mode, limit: 10 }).expect(200);
          return (response.body.results as Result[]).map((result) => ({ ...result, dataset_id: id }));
        }),
      );
      const response = await query({ dataset_ids: datasets, mode, limit: 10 }).expect(200);
      const merged = response.body.results as Result[];
      expect(merged).toHaveLength(10);
      expect(merged).toEqual(mergedByScore(alone, 10));
      expect(new Set(merged.map((result) => result.dataset_id))).toEqual(new Set(datasets));
    },
  );

  it('highlights the results of every dataset', async () => {
    const response = await query({
      dataset_ids: datasets,
      mode: 'keyword',
      limit: 6,
      highlight: true,
    }).expect(200);
    const results = response.body.results as (Result & {
      content: string;
      highlights: { start: number; end: number }[];
    })[];
    expect(new Set(results.map((result) => result.dataset_id)).size).toBeGreaterThan(1);
    for (const result of results) {
      const words = result.highlights.map(({ start, end }) => result.content.slice(start, end).toLowerCase());
      expect(words).toEqual(expect.arrayContaining(['tide', 'weather']));
    }
  });

  it('takes a public dataset of another account, and answers 404 for one the caller may not read', async () => {
    const response = await query({ dataset_ids: [datasets[0], publicOfStranger], limit: 10 }).expect(200);
    expect((response.body.results as Result[]).map((result) => result.dataset_id)).toContain(
      publicOfStranger,
    );
    for (const hidden of [privateOfStranger, 'ds_doesnotexist0000000000']) {
      const refused = await query({ dataset_ids: [datasets[0], hidden] }).expect(404);
      expect(refused.body).toMatchObject({ code: 'dataset_not_found', details: { dataset_id: hidden } });
    }
  });

  it('refuses dataset_ids with dataset_id, empty, too many, repeated or not strings', async () => {
    const cases: [object, string][] = [
      [{ dataset_id: datasets[0], dataset_ids: [datasets[1]] }, 'dataset_ids'],
      [{}, 'dataset_id'],
      [{ dataset_ids: [] }, 'dataset_ids'],
      [{ dataset_ids: Array.from({ length: 21 }, (_, i) => `ds_${i}`) }, 'dataset_ids'],
      [{ dataset_ids: [datasets[0], datasets[0]] }, 'dataset_ids'],
      [{ dataset_ids: [1] }, 'dataset_ids'],
      [{ dataset_ids: datasets[0] }, 'dataset_ids'],
    ];
    for (const [body, field] of cases) {
      const refused = await query(body).expect(400);
      expect([JSON.stringify(body), refused.body.code, refused.body.details?.field]).toEqual([
        JSON.stringify(body),
        'validation_error',
        field,
      ]);
    }
  });

  it('searches each query of a batch over the datasets, with max_per_document across them', async () => {
    const response = await t.http
      .post('/v1/mcp/batch-query')
      .set(bearer(key))
      .send({ dataset_ids: datasets, queries: ['tide', 'lighthouses keeper'], limit: 6, max_per_document: 1 })
      .expect(200);
    for (const { results } of response.body.results as { results: Result[] }[]) {
      expect(results.length).toBeGreaterThan(0);
      expect(results.every((result) => datasets.includes(result.dataset_id!))).toBe(true);
      expect(new Set(results.map((result) => result.document_id)).size).toBe(results.length);
    }
    const [lighthouses] = (response.body.results as { results: Result[] }[])[1].results;
    expect(lighthouses.dataset_id).toBe(datasets[1]);
  });

  describe('over MCP', () => {
    interface Cited extends Result {
      id: string;
      dataset_id: string;
      url: string;
    }

    let general: Client;
    beforeAll(async () => {
      general = await connect('/v1/mcp');
    });
    afterAll(() => general?.close());

    /** The SDK's client at one of the endpoints, with the owner's key. */
    async function connect(path: string): Promise<Client> {
      const client = new Client({ name: 'datasets agent', version: '1.0.0' });
      const headers = { Authorization: `Bearer ${key.api_key}` };
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${t.url}${path}`), { requestInit: { headers } }),
      );
      return client;
    }

    const call = async (client: Client, name: string, args: Record<string, unknown>) =>
      (await client.callTool({ name, arguments: args })) as CallToolResult;

    /** The contract's error body of a refused call. */
    function refusal(result: CallToolResult): { code: string; details?: Record<string, unknown> } {
      expect(result.isError).toBe(true);
      return JSON.parse((result.content[0] as { text: string }).text) as {
        code: string;
        details?: Record<string, unknown>;
      };
    }

    /** Each result cites the dataset it comes from, as the REST search names it. */
    function expectCitedFromOwnDataset(results: Cited[], rest: Result[]): void {
      expect(results.map((result) => [result.chunk_id, result.dataset_id])).toEqual(
        rest.map((result) => [result.chunk_id, result.dataset_id]),
      );
      for (const result of results) {
        expect(result.url).toBe(`${t.url}/v1/datasets/${result.dataset_id}/documents/${result.document_id}`);
      }
    }

    it('searches two datasets with dataset_ids, each result citing its own dataset', async () => {
      const two = [datasets[0], datasets[1]];
      const args = { query: 'tide weather', dataset_ids: two, mode: 'keyword', limit: 8 };
      const answer = await call(general, 'search', args);
      expect(answer.isError).toBeFalsy();
      const { results } = answer.structuredContent as { results: Cited[] };
      const rest = await query({ dataset_ids: two, mode: 'keyword', limit: 8 }).expect(200);
      expect(new Set(results.map((result) => result.dataset_id))).toEqual(new Set(two));
      expectCitedFromOwnDataset(results, rest.body.results as Result[]);

      const batch = await call(general, 'batch_search', {
        queries: ['tide', 'lighthouses keeper'],
        dataset_ids: two,
        mode: 'keyword',
        limit: 6,
      });
      expect(batch.isError).toBeFalsy();
      const answers = (batch.structuredContent as { results: { results: Cited[] }[] }).results;
      const restBatch = await t.http
        .post('/v1/mcp/batch-query')
        .set(bearer(key))
        .send({ queries: ['tide', 'lighthouses keeper'], dataset_ids: two, mode: 'keyword', limit: 6 })
        .expect(200);
      answers.forEach(({ results: cited }, i) =>
        expectCitedFromOwnDataset(cited, (restBatch.body.results as { results: Result[] }[])[i].results),
      );
      expect(answers[1].results[0].dataset_id).toBe(datasets[1]);
    });

    it('refuses both dataset_id and dataset_ids, and neither, as the REST search does', async () => {
      for (const [name, asked] of [
        ['search', { query: 'tide' }],
        ['batch_search', { queries: ['tide'] }],
      ] as const) {
        for (const named of [{ dataset_id: datasets[0], dataset_ids: [datasets[1]] }, {}]) {
          const path = name === 'search' ? '/v1/mcp/query' : '/v1/mcp/batch-query';
          const rest = await t.http
            .post(path)
            .set(bearer(key))
            .send({ ...asked, ...named })
            .expect(400);
          const refused = refusal(await call(general, name, { ...asked, ...named }));
          expect([name, refused]).toEqual([
            name,
            { error: rest.body.error, code: 'validation_error', details: rest.body.details },
          ]);
        }
      }
    });

    it('answers dataset_not_found for a dataset of dataset_ids the caller may not read', async () => {
      for (const hidden of [privateOfStranger, 'ds_doesnotexist0000000000']) {
        const refused = refusal(
          await call(general, 'search', { query: 'tide', dataset_ids: [datasets[0], hidden] }),
        );
        expect(refused).toMatchObject({ code: 'dataset_not_found', details: { dataset_id: hidden } });
      }
      const open = await call(general, 'search', {
        query: 'tide pier',
        dataset_ids: [datasets[0], publicOfStranger],
        limit: 10,
      });
      const { results } = open.structuredContent as { results: Cited[] };
      expect(results.map((result) => result.dataset_id)).toContain(publicOfStranger);
    });

    it('refuses dataset_ids at a per-dataset endpoint, which lists neither', async () => {
      const fixed = await connect(`/v1/mcp/datasets/${datasets[0]}`);
      try {
        const { tools } = await fixed.listTools();
        for (const name of ['search', 'batch_search']) {
          const schema = tools.find((tool) => tool.name === name)!.inputSchema;
          expect(schema.properties).not.toHaveProperty('dataset_ids');
          expect(schema).not.toHaveProperty('oneOf');
        }
        for (const args of [
          { query: 'tide', dataset_ids: [datasets[1]] },
          { query: 'tide', dataset_ids: [datasets[0]] },
        ]) {
          expect(refusal(await call(fixed, 'search', args))).toMatchObject({
            code: 'validation_error',
            details: { field: 'dataset_ids' },
          });
        }
        expect(
          refusal(await call(fixed, 'batch_search', { queries: ['tide'], dataset_ids: [datasets[1]] })),
        ).toMatchObject({ code: 'validation_error', details: { field: 'dataset_ids' } });
        const alone = await call(fixed, 'search', { query: 'tide' });
        const { results } = alone.structuredContent as { results: Cited[] };
        expect(results.every((result) => result.dataset_id === datasets[0])).toBe(true);
      } finally {
        await fixed.close();
      }
    });
  });
});

describe('dataset_ids: the vector leg of datasets of one model in one walk of their index', () => {
  let t: TestApp;
  let openai: FakeOpenAI;
  let key: CreatedKey;
  const datasets: string[] = [];

  beforeAll(async () => {
    openai = await startFakeOpenAI();
    // Every vector leg walks the HNSW index: over 3 datasets of 25 chunks, one walk finds the 50
    // candidates; under a filter that passes a third of them, it comes short and each dataset ranks alone.
    t = await startTestApp({ ...openAiEnv(openai), SEARCH_EXACT_SCAN_MAX_CHUNKS: '0' });
    key = await t.createApiKey('walk-owner');
    for (const topic of ['tides', 'lighthouses', 'harbours']) {
      const id = await createDataset(t.http, key, { name: topic });
      await ingest(
        t,
        key,
        id,
        Array.from({ length: 25 }, (_, i) => ({
          content: `Log ${i} of the ${topic}: entry number ${i * 7} on the ${topic} at hour ${i % 24}.`,
          metadata: { shift: i % 3 === 0 ? 'night' : 'day' },
        })),
      );
      datasets.push(id);
    }
  });
  afterAll(async () => {
    await t?.close();
    await openai?.close();
  });

  const search = async (body: object) =>
    (
      await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ query: 'entry of the night', mode: 'semantic', limit: 10, ...body })
        .expect(200)
    ).body.results as Result[];

  it.each([
    ['one walk for all', undefined],
    ['each alone, the walk coming short', { shift: 'night' }],
  ])('finds the nearest chunks of every dataset, as each searched alone does (%s)', async (_how, filters) => {
    const alone = await Promise.all(
      datasets.map(async (id) =>
        (await search({ dataset_id: id, filters })).map((result) => ({ ...result, dataset_id: id })),
      ),
    );
    const merged = await search({ dataset_ids: datasets, filters });
    expect(merged).toHaveLength(10);
    expect(merged).toEqual(mergedByScore(alone, 10));
  });
});
