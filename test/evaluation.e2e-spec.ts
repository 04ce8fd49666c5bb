import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createDataset, ingest } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

interface Figures {
  ndcg_at_10: number;
  recall_at_100: number;
  mrr_at_10: number;
}

interface Mode extends Figures {
  mode: 'keyword' | 'semantic' | 'hybrid';
  weights?: { keyword: number; semantic: number };
  weights_source?: 'dataset' | 'default' | 'request' | 'grid';
}

interface Evaluation {
  dataset_id: string;
  queries: number;
  modes: Mode[];
  semantic_unavailable?: string;
  per_query?: { query: string; relevant_documents: number; modes: Mode[] }[];
  evaluation_time_ms: number;
}

/**
 * The figures as bench/relevance.mjs computes them (its `measure` and `ndcg`), from the documents of
 * a search's results in their order, each at its first result.
 */
function benchFigures(ranking: string[], relevant: Map<string, number>): Figures {
  const ideal = [...relevant.values()]
    .sort((a, b) => b - a)
    .slice(0, 10)
    .reduce((sum, rel, i) => sum + rel / Math.log2(i + 2), 0);
  const dcg = ranking
    .slice(0, 10)
    .reduce((sum, id, i) => sum + (relevant.get(id) ?? 0) / Math.log2(i + 2), 0);
  const first = ranking.slice(0, 10).findIndex((id) => relevant.has(id));
  return {
    ndcg_at_10: ideal === 0 ? 0 : dcg / ideal,
    recall_at_100: ranking.slice(0, 100).filter((id) => relevant.has(id)).length / relevant.size,
    mrr_at_10: first === -1 ? 0 : 1 / (first + 1),
  };
}

const figuresOf = ({ ndcg_at_10, recall_at_100, mrr_at_10 }: Figures): Figures => ({
  ndcg_at_10,
  recall_at_100,
  mrr_at_10,
});

describe('Evaluation on a keyword-only service', () => {
  let t: TestApp;
  let key: CreatedKey;
  let otherKey: CreatedKey;
  let datasetId: string;
  let elsewhere: string;
  let docs: Record<'a' | 'b' | 'c' | 'd', string>;
  let foreignDocument: string;

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_API_KEY: '100000', RATE_LIMIT_ANONYMOUS: '100000' });
    key = await t.createApiKey('acme');
    otherKey = await t.createApiKey('globex');
    datasetId = await createDataset(t.http, key, { name: 'Letters' });
    // Four words each, so that BM25 orders them by their counts of the query's word alone.
    const [a, b, c, d] = await ingest(t, key, datasetId, [
      { content: 'alpha alpha alpha bravo', metadata: { source_id: 'a' } },
      { content: 'alpha charlie delta echo', metadata: { source_id: 'b', tags: ['x'] } },
      { content: 'foxtrot golf hotel india', metadata: { source_id: 'c' } },
      { content: 'juliet kilo bravo bravo', metadata: { source_id: 'd', tags: ['x', 'y'] } },
    ]);
    docs = { a, b, c, d };
    elsewhere = await createDataset(t.http, otherKey, { name: 'Globex letters' });
    [foreignDocument] = await ingest(t, otherKey, elsewhere, [{ content: 'alpha omega' }]);
  }, 60_000);
  afterAll(() => t.close());

  const evaluate = (body: object, dataset = datasetId, caller: CreatedKey | null = key) => {
    const request = t.http.post(`/v1/datasets/${dataset}/evaluations`);
    return caller ? request.set(bearer(caller)).send(body) : request.send(body);
  };

  it('gives the figures of a known ranking, each query’s unrounded, and keyword only without vectors', async () => {
    const response = await evaluate({
      queries: [
        // Ranked a, b: b (grade 2) second, c (grade 1) not found.
        {
          query: 'alpha',
          relevant: [{ document_id: docs.b, grade: 2 }, { metadata: { source_id: 'c' } }],
        },
        { query: 'juliet', relevant: [{ metadata: { source_id: 'd' } }] },
      ],
      per_query: true,
    }).expect(200);
    expect(response.headers['x-ratelimit-limit']).toBe('100000');
    const first = 2 / Math.log2(3) / (2 + 1 / Math.log2(3));
    expect(response.body).toEqual({
      dataset_id: datasetId,
      queries: 2,
      modes: [{ mode: 'keyword', ndcg_at_10: 0.7398, recall_at_100: 0.75, mrr_at_10: 0.75 }],
      semantic_unavailable: 'the service runs keyword-only (no embedding provider)',
      per_query: [
        {
          query: 'alpha',
          relevant_documents: 2,
          modes: [{ mode: 'keyword', ndcg_at_10: first, recall_at_100: 0.5, mrr_at_10: 0.5 }],
        },
        {
          query: 'juliet',
          relevant_documents: 1,
          modes: [{ mode: 'keyword', ndcg_at_10: 1, recall_at_100: 1, mrr_at_10: 1 }],
        },
      ],
      evaluation_time_ms: expect.any(Number),
    });
  });

  it('matches metadata as a filter does, and gives a document named twice its highest grade', async () => {
    // d (tags x, y; grade 3 by id) ranks first, a second; b (tags x) holds no "bravo".
    const response = await evaluate({
      queries: [
        { query: 'bravo', relevant: [{ metadata: { tags: 'x' } }, { document_id: docs.d, grade: 3 }] },
      ],
      per_query: true,
    }).expect(200);
    const body = response.body as Evaluation;
    expect(body.per_query![0].relevant_documents).toBe(2);
    expect(figuresOf(body.per_query![0].modes[0])).toEqual({
      ndcg_at_10: 3 / (3 + 1 / Math.log2(3)),
      recall_at_100: 0.5,
      mrr_at_10: 1,
    });
  });

  it('searches under the filters, as every query of a batch does', async () => {
    const response = await evaluate({
      queries: [{ query: 'alpha', relevant: [{ document_id: docs.b }] }],
      filters: { source_id: { $ne: 'b' } },
    }).expect(200);
    expect(figuresOf((response.body as Evaluation).modes[0])).toEqual({
      ndcg_at_10: 0,
      recall_at_100: 0,
      mrr_at_10: 0,
    });
  });

  const judged = (relevant: object[]) => ({ queries: [{ query: 'alpha', relevant }] });

  it.each<[string, () => object, string, string, string]>([
    [
      'no queries',
      () => ({ queries: [] }),
      'validation_error',
      'queries',
      'must hold at least one judged query',
    ],
    ['no queries field', () => ({}), 'validation_error', 'queries', 'is required'],
    [
      'a query too long',
      () => ({ queries: [{ query: 'x'.repeat(1001), relevant: [{ document_id: docs.a }] }] }),
      'query_too_long',
      'queries[0].query',
      'has 1001 characters; at most 1000',
    ],
    [
      'a query with nothing visible',
      () => ({ queries: [{ query: '\u200b', relevant: [{ document_id: docs.a }] }] }),
      'validation_error',
      'queries[0].query',
      'must contain visible text',
    ],
    [
      'an empty relevant',
      () => judged([]),
      'validation_error',
      'queries[0].relevant',
      'must name at least one relevant document',
    ],
    [
      'an item naming no document',
      () => judged([{ grade: 2 }]),
      'validation_error',
      'queries[0].relevant[0]',
      'must name documents by document_id or by metadata, one of the two',
    ],
    [
      'an item naming documents twice over',
      () => judged([{ document_id: docs.a, metadata: { source_id: 'a' } }]),
      'validation_error',
      'queries[0].relevant[0]',
      'must name documents by document_id or by metadata, one of the two',
    ],
    [
      'a grade of 0',
      () => judged([{ document_id: docs.a, grade: 0 }]),
      'validation_error',
      'queries[0].relevant[0].grade',
      'must be an integer from 1 to 100',
    ],
    [
      'an operator in metadata',
      () => judged([{ metadata: { source_id: { $in: ['a'] } } }]),
      'validation_error',
      'queries[0].relevant[0].metadata.source_id',
      'must be a string, a number or a boolean',
    ],
    [
      'empty metadata',
      () => judged([{ metadata: {} }]),
      'validation_error',
      'queries[0].relevant[0].metadata',
      'must name at least one metadata field',
    ],
    [
      'an unknown document',
      () => ({
        queries: [
          { query: 'alpha', relevant: [{ document_id: docs.a }] },
          { query: 'bravo', relevant: [{ document_id: 'doc_0000000000000000000000' }] },
        ],
      }),
      'validation_error',
      'queries[1].relevant[0].document_id',
      'names no document of the dataset',
    ],
    [
      'a document of another dataset',
      () => judged([{ document_id: foreignDocument }]),
      'validation_error',
      'queries[0].relevant[0].document_id',
      'names no document of the dataset',
    ],
    [
      'metadata no document holds',
      () => judged([{ document_id: docs.a }, { metadata: { source_id: 'zz' } }]),
      'validation_error',
      'queries[0].relevant[1].metadata',
      'matches no document of the dataset',
    ],
    [
      'more than 10 weights',
      () => ({
        ...judged([{ document_id: docs.a }]),
        weights: Array.from({ length: 11 }, () => ({ keyword: 1 })),
      }),
      'validation_error',
      'weights',
      'must hold at most 10 weights',
    ],
    [
      'a weight outside 0-1',
      () => ({ ...judged([{ document_id: docs.a }]), weights: [{ keyword: 2 }] }),
      'validation_error',
      'weights[0].keyword',
      'must be a number from 0 to 1',
    ],
    [
      'a malformed filter',
      () => ({ ...judged([{ document_id: docs.a }]), filters: { year: { gte: 2000 } } }),
      'invalid_filter',
      'year',
      '"gte" is not an operator; did you mean "$gte"?',
    ],
    [
      'a field it does not know',
      () => ({ ...judged([{ document_id: docs.a }]), mode: 'hybrid' }),
      'validation_error',
      'mode',
      'is not a known field',
    ],
  ])('refuses %s with 400', async (_case, body, code, field, issue) => {
    const response = await evaluate(body()).expect(400);
    expect(response.body).toMatchObject({ code, details: { field, issue } });
  });

  it('refuses more than 100 judged queries with 400 too_many_queries', async () => {
    const queries = Array.from({ length: 101 }, () => ({
      query: 'alpha',
      relevant: [{ document_id: docs.a }],
    }));
    const response = await evaluate({ queries }).expect(400);
    expect(response.body).toMatchObject({
      code: 'too_many_queries',
      details: { field: 'queries', count: 101, limit: 100 },
    });
  });

  it('answers 404 dataset_not_found for an unknown dataset and for another account’s', async () => {
    const body = judged([{ document_id: docs.a }]);
    for (const dataset of ['ds_0000000000000000000000', elsewhere]) {
      const response = await evaluate(body, dataset).expect(404);
      expect(response.body).toMatchObject({ code: 'dataset_not_found', details: { dataset_id: dataset } });
    }
    await evaluate(body, datasetId, null).expect(404);
  });

  it('lets anyone evaluate a public dataset, as anyone may search it', async () => {
    await t.http.patch(`/v1/datasets/${datasetId}`).set(bearer(key)).send({ is_public: true }).expect(200);
    try {
      const response = await evaluate(judged([{ document_id: docs.a }]), datasetId, null).expect(200);
      expect((response.body as Evaluation).modes[0]).toMatchObject({ mode: 'keyword', mrr_at_10: 1 });
    } finally {
      await t.http.patch(`/v1/datasets/${datasetId}`).set(bearer(key)).send({ is_public: false }).expect(200);
    }
  });
});

describe('Evaluation with vectors', () => {
  let openai: FakeOpenAI;
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;
  const TEXTS = [
    'Solar panels convert sunlight into electricity with photovoltaic cells.',
    'Wind turbines generate electricity from moving air in the North Sea.',
    'Battery storage keeps solar electricity for the night.',
    'Hydroelectric dams turn falling water into power.',
    'Heat pumps move heat from cold air into warm houses.',
    'Nuclear reactors split atoms to boil water for turbines.',
    'Electric cars charge their batteries from the grid at night.',
    'Geothermal plants draw heat from deep under the ground.',
  ];
  const QUERIES: { query: string; relevant: { metadata: { n: number }; grade?: number }[] }[] = [
    {
      query: 'solar electricity at night',
      relevant: [{ metadata: { n: 0 } }, { metadata: { n: 2 }, grade: 2 }],
    },
    {
      query: 'turbines and water',
      relevant: [{ metadata: { n: 3 } }, { metadata: { n: 5 } }, { metadata: { n: 1 } }],
    },
    { query: 'heat for houses', relevant: [{ metadata: { n: 4 }, grade: 3 }, { metadata: { n: 7 } }] },
  ];
  const WEIGHTS = [{ keyword: 0.8, semantic: 0.2 }, { semantic: 0.3 }];
  const SEARCH_TIMEOUT_MS = 1_500;

  beforeAll(async () => {
    openai = await startFakeOpenAI(8);
    t = await startTestApp({
      ...openAiEnv(openai),
      RATE_LIMIT_API_KEY: '100000',
      SEARCH_TIMEOUT_MS: String(SEARCH_TIMEOUT_MS),
    });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    await ingest(
      t,
      key,
      datasetId,
      TEXTS.map((content, n) => ({ content, metadata: { n } })),
    );
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await openai.close();
  });

  const evaluation = async () =>
    (
      await t.http
        .post(`/v1/datasets/${datasetId}/evaluations`)
        .set(bearer(key))
        .send({ queries: QUERIES, weights: WEIGHTS, per_query: true })
        .expect(200)
    ).body as Evaluation;

  it('judges both legs, hybrid at the weights searches use, at the request’s and at the grid, each once', async () => {
    const body = await evaluation();
    expect(body.semantic_unavailable).toBeUndefined();
    expect(
      body.modes.map(({ mode, weights, weights_source }) => ({ mode, weights, weights_source })),
    ).toEqual([
      { mode: 'keyword' },
      { mode: 'semantic' },
      // Too small a dataset for its weights to be chosen: its searches fuse at equal weights.
      { mode: 'hybrid', weights: { keyword: 0.5, semantic: 0.5 }, weights_source: 'default' },
      { mode: 'hybrid', weights: { keyword: 0.8, semantic: 0.2 }, weights_source: 'request' },
      { mode: 'hybrid', weights: { keyword: 0.7, semantic: 0.3 }, weights_source: 'request' },
      { mode: 'hybrid', weights: { keyword: 1, semantic: 0 }, weights_source: 'grid' },
      { mode: 'hybrid', weights: { keyword: 0.3, semantic: 0.7 }, weights_source: 'grid' },
      { mode: 'hybrid', weights: { keyword: 0, semantic: 1 }, weights_source: 'grid' },
    ]);
    // The means are the per-query figures' means, to 4 decimals.
    body.modes.forEach((mode, j) => {
      const mean = (pick: keyof Figures) =>
        Math.round((body.per_query!.reduce((sum, query) => sum + query.modes[j][pick], 0) / 3) * 10_000) /
        10_000;
      expect(figuresOf(mode)).toEqual({
        ndcg_at_10: mean('ndcg_at_10'),
        recall_at_100: mean('recall_at_100'),
        mrr_at_10: mean('mrr_at_10'),
      });
    });
  });

  it('gives each ranking the figures of the search that answers it, computed as the bench does', async () => {
    const body = await evaluation();
    const documents = new Map<number, string>();
    for (const { document_id, metadata } of (
      await t.http.get(`/v1/datasets/${datasetId}/documents?limit=100`).set(bearer(key)).expect(200)
    ).body.documents as { document_id: string; metadata: { n: number } }[]) {
      documents.set(metadata.n, document_id);
    }
    for (const [i, judgedQuery] of QUERIES.entries()) {
      const relevant = new Map(
        judgedQuery.relevant.map((item) => [documents.get(item.metadata.n)!, item.grade ?? 1]),
      );
      let requested = 0;
      for (const row of body.per_query![i].modes) {
        // The weights as the request or the grid gave them; a search without any uses the dataset's.
        const weights =
          row.weights_source === 'request'
            ? WEIGHTS[requested++]
            : row.weights_source === 'grid'
              ? { semantic: row.weights!.semantic }
              : undefined;
        const results = (
          await t.http
            .post('/v1/mcp/query')
            .set(bearer(key))
            .send({ dataset_id: datasetId, query: judgedQuery.query, mode: row.mode, weights, limit: 50 })
            .expect(200)
        ).body.results as { document_id: string }[];
        const ranking = [...new Set(results.map((result) => result.document_id))];
        expect([judgedQuery.query, row.mode, row.weights, figuresOf(row)]).toEqual([
          judgedQuery.query,
          row.mode,
          row.weights,
          benchFigures(ranking, relevant),
        ]);
      }
    }
  });

  it('answers the MCP tool evaluate with the same JSON, and its refusals as tool errors', async () => {
    const rest = await evaluation();
    const withoutTime = ({ evaluation_time_ms: _, ...rest }: Evaluation) => rest;
    for (const [path, args] of [
      ['/v1/mcp', { dataset_id: datasetId }],
      [`/v1/mcp/datasets/${datasetId}`, {}],
    ] as const) {
      const client = new Client({ name: 'evaluation test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${t.url}${path}`), {
          requestInit: { headers: { Authorization: `Bearer ${key.api_key}` } },
        }),
      );
      try {
        const tools = (await client.listTools()).tools.map((tool) => tool.name);
        expect(tools).toContain('evaluate');
        const answer = (await client.callTool({
          name: 'evaluate',
          arguments: { ...args, queries: QUERIES, weights: WEIGHTS, per_query: true },
        })) as CallToolResult;
        expect(answer.isError).toBeFalsy();
        expect(JSON.parse((answer.content[0] as { text: string }).text)).toEqual(answer.structuredContent);
        expect(withoutTime(answer.structuredContent as unknown as Evaluation)).toEqual(withoutTime(rest));

        const refused = (await client.callTool({
          name: 'evaluate',
          arguments: { ...args, queries: [{ query: 'solar', relevant: [] }] },
        })) as CallToolResult;
        expect(refused.isError).toBe(true);
        expect(JSON.parse((refused.content[0] as { text: string }).text)).toMatchObject({
          code: 'validation_error',
          details: { field: 'queries[0].relevant', issue: 'must name at least one relevant document' },
        });
      } finally {
        await client.close();
      }
    }
  });

  it('answers 504 query_timeout past the search timeout, as a batch does', async () => {
    openai.delayMs = SEARCH_TIMEOUT_MS + 1_000;
    try {
      const response = await t.http
        .post(`/v1/datasets/${datasetId}/evaluations`)
        .set(bearer(key))
        .send({ queries: [{ query: 'tidal energy from the sea', relevant: [{ metadata: { n: 1 } }] }] })
        .expect(504);
      expect(response.body).toMatchObject({
        code: 'query_timeout',
        details: { timeout_ms: SEARCH_TIMEOUT_MS },
      });
    } finally {
      openai.delayMs = 0;
    }
  });
});
