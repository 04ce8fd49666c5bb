import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { lexemeSource } from 'src/modules/chunk-index/lexeme-source.js';
import { createDataset, ingest } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

interface Span {
  start: number;
  end: number;
}

interface Result {
  chunk_id: string;
  content: string;
  highlights?: Span[];
}

const SCIFACT = '../shared/datasets/scifact';
const DOCUMENTS = 300;
const QUERIES = 300;

/** Hand cases: each passage, a query, and the texts of `content` the query must highlight. */
const CASES = [
  {
    content: 'The runner kept running: two runs a day, and she ran the race.',
    query: 'run',
    highlighted: ['running', 'runs'],
  },
  {
    content: 'The cat sat in the hat by the door.',
    query: 'the cat in the hat',
    highlighted: ['cat', 'hat'],
  },
  {
    content: 'Write to ada@example.org or read https://docs.example.com/guide/install on well-being.',
    query: 'ada@example.org docs.example.com well-being',
    highlighted: ['ada@example.org', 'docs.example.com', 'well-being'],
  },
  {
    content: 'Le résumé du café, écrit à Zürich.'.normalize('NFD'),
    query: 'résumé Zürich',
    highlighted: ['résumé'.normalize('NFD'), 'Zürich'.normalize('NFD')],
  },
  {
    content: 'The Ｔｏｋｙｏ ２０２４ report on ﬁnancial data.',
    query: 'tokyo 2024 financial',
    highlighted: ['Ｔｏｋｙｏ', '２０２４', 'ﬁnancial'],
  },
  {
    content: 'Retrieval of infor\u00ADmation in libraries.',
    query: 'information',
    highlighted: ['infor\u00ADmation'],
  },
  {
    content: '全文检索引擎支持中文搜索，速度很快。',
    query: '检索引擎',
    highlighted: ['检索引擎'],
  },
  { content: '東京都庁に行く。都庁は新宿にあります。', query: '都庁', highlighted: ['都庁', '都庁'] },
];

describe('Search highlights', () => {
  let openai: FakeOpenAI;
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;
  const corpus = readFileSync(`${SCIFACT}/corpus.jsonl`, 'utf8')
    .split('\n', DOCUMENTS)
    .map((line) => (JSON.parse(line) as { text: string }).text);
  const queries = readFileSync(`${SCIFACT}/queries.jsonl`, 'utf8')
    .split('\n', QUERIES)
    .map((line) => (JSON.parse(line) as { text: string }).text);

  beforeAll(async () => {
    openai = await startFakeOpenAI(4);
    t = await startTestApp({ ...openAiEnv(openai), RATE_LIMIT_API_KEY: '100000' });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    await ingest(t, key, datasetId, [
      ...CASES.map(({ content }) => ({ content })),
      ...corpus.map((content) => ({ content })),
    ]);
  }, 300_000);
  afterAll(async () => {
    await t?.close();
    await openai?.close();
  });

  const query = (body: object) =>
    t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, ...body });

  /** Each text's lexemes as the keyword leg takes them: `english` over its lexeme source. */
  async function lexed(texts: string[]): Promise<string[][]> {
    const { rows } = await t.sql.query<{ lexemes: string[] }>(
      `SELECT tsvector_to_array(to_tsvector('english', s)) AS lexemes
         FROM unnest($1::text[]) WITH ORDINALITY AS t(s, n) ORDER BY n`,
      [texts.map(lexemeSource)],
    );
    return rows.map((row) => row.lexemes);
  }

  /**
   * The two properties of every result's highlights: each span's text, lexed, holds a lexeme of the
   * query; and each lexeme of the query that the content holds is in some span. Returns the spans' count.
   */
  async function checkHighlights(answers: { query: string; results: Result[] }[]): Promise<number> {
    const results = answers.flatMap(({ query, results }) => results.map((result) => ({ query, result })));
    const spanTexts = results.flatMap(({ result }) =>
      result.highlights!.map((span) => result.content.slice(span.start, span.end)),
    );
    const [queryLexemes, contentLexemes, spanLexemes] = await Promise.all([
      lexed(results.map(({ query }) => query)),
      lexed(results.map(({ result }) => result.content)),
      lexed(spanTexts),
    ]);
    let s = 0;
    results.forEach(({ query, result }, r) => {
      const spans = result.highlights!;
      const terms = new Set(queryLexemes[r]);
      let previousEnd = -1;
      const covered = new Set<string>();
      for (const span of spans) {
        // Sorted, apart from one another (touching spans are merged), within the content.
        expect(span.start).toBeGreaterThan(previousEnd);
        expect(span.end).toBeGreaterThan(span.start);
        expect(span.end).toBeLessThanOrEqual(result.content.length);
        previousEnd = span.end;
        const lexemes = spanLexemes[s++];
        const matched = lexemes.filter((lexeme) => terms.has(lexeme));
        if (matched.length === 0)
          throw new Error(
            `span ${JSON.stringify(result.content.slice(span.start, span.end))} of ${result.chunk_id} holds none of ` +
              `${JSON.stringify(query)}'s lexemes`,
          );
        for (const lexeme of lexemes) covered.add(lexeme);
      }
      const missed = contentLexemes[r].filter((lexeme) => terms.has(lexeme) && !covered.has(lexeme));
      if (missed.length > 0)
        throw new Error(
          `${result.chunk_id} holds ${JSON.stringify(missed)} of ${JSON.stringify(query)} unhighlighted`,
        );
    });
    return s;
  }

  it("highlights, in keyword, semantic and hybrid results, the query's lexemes and only them", async () => {
    const answers: { query: string; results: Result[] }[] = [];
    for (let first = 0; first < queries.length; first += 10) {
      const batch = queries.slice(first, first + 10);
      const response = await t.http
        .post('/v1/mcp/batch-query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, queries: batch, mode: 'keyword', limit: 5, highlight: true })
        .expect(200);
      answers.push(...(response.body.results as { query: string; results: Result[] }[]));
    }
    for (const mode of ['semantic', 'hybrid']) {
      for (const text of queries.slice(0, 40)) {
        const response = await query({ query: text, mode, limit: 5, highlight: true }).expect(200);
        answers.push({ query: text, results: response.body.results as Result[] });
      }
    }
    const results = answers.flatMap((answer) => answer.results);
    expect(results.length).toBeGreaterThan(1_500);
    expect(results.every((result) => Array.isArray(result.highlights))).toBe(true);
    const spans = await checkHighlights(answers);
    // Keyword results hold a term of their query each: nearly all of them have spans.
    expect(spans).toBeGreaterThan(3_000);
    expect(results.filter((result) => result.highlights!.length > 0).length).toBeGreaterThan(1_300);
  }, 300_000);

  it.each(CASES)(
    'highlights $query in its passage as written',
    async ({ content, query: text, highlighted }) => {
      const response = await query({ query: text, mode: 'keyword', limit: 50, highlight: true }).expect(200);
      const results = response.body.results as Result[];
      const result = results.find((r) => r.content === content)!;
      expect(result).toBeDefined();
      expect(result.highlights!.map((span) => content.slice(span.start, span.end))).toEqual(highlighted);
      await checkHighlights([{ query: text, results }]);
    },
  );

  it('leaves results without highlights unless asked, and refuses a highlight that is not a boolean', async () => {
    const plain = await query({ query: 'run', mode: 'keyword' }).expect(200);
    expect((plain.body.results as Result[]).length).toBeGreaterThan(0);
    expect((plain.body.results as Result[]).some((result) => 'highlights' in result)).toBe(false);
    const refused = await query({ query: 'run', highlight: 'yes' }).expect(400);
    expect(refused.body.code).toBe('validation_error');
    expect(refused.body.details.errors).toEqual([{ field: 'highlight', issue: 'must be a boolean' }]);
  });

  it('gives the MCP search tool the same highlights as REST', async () => {
    const client = new Client({ name: 'test agent', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${t.url}/v1/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${key.api_key}` } },
      }),
    );
    try {
      const arguments_ = { dataset_id: datasetId, query: 'run', mode: 'keyword', highlight: true };
      const call = (await client.callTool({ name: 'search', arguments: arguments_ })) as CallToolResult;
      expect(call.isError).toBeFalsy();
      const tool = (call.structuredContent as { results: Result[] }).results;
      const rest = (await query(arguments_).expect(200)).body.results as Result[];
      expect(tool.map((r) => [r.chunk_id, r.highlights])).toEqual(
        rest.map((r) => [r.chunk_id, r.highlights]),
      );
      expect(tool.some((r) => r.highlights!.length > 0)).toBe(true);
      const batch = (await client.callTool({
        name: 'batch_search',
        arguments: { dataset_id: datasetId, queries: ['run', 'tokyo'], mode: 'keyword', highlight: true },
      })) as CallToolResult;
      const items = (batch.structuredContent as { results: { results: Result[] }[] }).results;
      expect(items.flatMap((item) => item.results).every((r) => Array.isArray(r.highlights))).toBe(true);
    } finally {
      await client.close();
    }
  });
});
