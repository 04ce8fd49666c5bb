import { createDataset } from './utils/documents.js';
import { type FakeOpenAI, fakeTokens, hashVector, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { until } from './utils/until.js';

/**
 * The passages of many documents processed at once share requests to an OpenAI-compatible server,
 * which may answer 429 or refuse a request as too large: the documents still become ready.
 */
describe('Embedding requests batched across documents', () => {
  let openai: FakeOpenAI;
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;

  beforeAll(async () => {
    openai = await startFakeOpenAI(8);
    t = await startTestApp({
      ...openAiEnv(openai),
      INGEST_CONCURRENCY: '16',
      EMBEDDING_REQUEST_CONCURRENCY: '2',
      EMBEDDING_REQUEST_BATCH: '64',
      RATE_LIMIT_API_KEY: '100000',
    });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await openai?.close();
  });
  afterEach(() => {
    openai.delayMs = 0;
    openai.rateLimit(0);
    openai.limits = {};
  });

  /** A short document of one chunk, marked `tag`. */
  const content = (tag: string, i: number) => `${tag} document ${i}: a short note about rivers and hills.`;

  /** Uploads the documents at once; waits (reading the database, not polling the API) until none is processing. */
  async function ingestAll(texts: string[]): Promise<string[]> {
    const ids = await Promise.all(
      texts.map(async (text) => {
        const response = await t.http
          .post(`/v1/datasets/${datasetId}/documents`)
          .set(bearer(key))
          .send({ content: text })
          .expect(201);
        return (response.body as { document_id: string }).document_id;
      }),
    );
    await until(async () => {
      const { rows } = await t.sql.query(
        `SELECT count(*)::int AS n FROM documents WHERE id = ANY($1) AND status = 'processing'`,
        [ids],
      );
      return rows[0].n === 0;
    }, 90_000);
    return ids;
  }

  /** The documents' statuses, and whether each chunk holds the fake's vector of its own text. */
  async function outcome(ids: string[]) {
    const statuses = await t.sql.query(
      'SELECT status, count(*)::int AS n FROM documents WHERE id = ANY($1) GROUP BY status',
      [ids],
    );
    const chunks = await t.sql.query<{ content: string; embedding: string | null }>(
      'SELECT content, embedding::text AS embedding FROM chunks WHERE document_id = ANY($1)',
      [ids],
    );
    const own = chunks.rows.filter((row) => {
      if (!row.embedding) return false;
      const stored = JSON.parse(row.embedding) as number[];
      return hashVector(row.content, 8).every((x, i) => Math.abs(x - stored[i]) < 1e-5);
    });
    return {
      statuses: Object.fromEntries(statuses.rows.map((row) => [row.status, row.n])),
      chunks: chunks.rows.length,
      withOwnVector: own.length,
      rows: chunks.rows,
    };
  }

  /** The fake's answers to requests holding a passage marked `tag`. */
  const answersFor = (tag: string, from: number) =>
    openai.requests
      .map((texts, i) => ({ texts, ...openai.answers[i] }))
      .slice(from)
      .filter(({ texts }) => texts.some((text) => text.startsWith(tag)));

  it('embeds the passages of 48 documents in few full requests, never more than EMBEDDING_REQUEST_CONCURRENCY at once', async () => {
    openai.delayMs = 400;
    openai.mostInFlight = 0;
    const from = openai.requests.length;
    const ids = await ingestAll(Array.from({ length: 48 }, (_, i) => content('Many', i)));

    expect(await outcome(ids)).toMatchObject({ statuses: { ready: 48 }, chunks: 48, withOwnVector: 48 });
    const sizes = answersFor('Many', from).map((answer) => answer.inputs);
    // One request a document before; here the passages of the jobs waiting meanwhile go together.
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(48);
    expect(sizes.length).toBeLessThanOrEqual(12);
    expect(Math.max(...sizes)).toBeGreaterThanOrEqual(8);
    expect(openai.mostInFlight).toBeLessThanOrEqual(2);
  }, 120_000);

  it('waits out 429 answers, honouring retry-after-ms, and the documents become ready', async () => {
    const from = openai.requests.length;
    openai.rateLimit(3, { 'retry-after-ms': '700' });
    const ids = await ingestAll(Array.from({ length: 10 }, (_, i) => content('Limited', i)));

    expect(await outcome(ids)).toMatchObject({ statuses: { ready: 10 }, chunks: 10, withOwnVector: 10 });
    const statuses = openai.answers.slice(from).map((answer) => answer.status);
    expect(statuses.filter((status) => status === 429)).toHaveLength(3);
    expect(t.output()).toContain('the embeddings endpoint is rate limiting: passages wait');
  }, 120_000);

  it('splits requests the server refuses as too large, truncates a passage too long, and the documents become ready', async () => {
    openai.delayMs = 300;
    // As Azure (inputs a request) and vLLM (tokens an input) say; the long document is one chunk of
    // about 1,200 characters, which the fake's model refuses past 200 of its tokens.
    openai.limits = { maxInputs: 5, maxInputTokens: 200 };
    const from = openai.requests.length;
    const long = `Large document: ${'a long river runs through the hills. '.repeat(33)}`;
    const ids = await ingestAll([...Array.from({ length: 24 }, (_, i) => content('Large', i)), long]);

    const result = await outcome(ids);
    expect(result).toMatchObject({ statuses: { ready: 25 }, chunks: 25, withOwnVector: 24 });
    // The long one's vector is that of its start, as much as the model takes.
    const longChunk = result.rows.find((row) => row.content === long.trim())!;
    const sent = openai.inputs.filter((text) => text !== long.trim() && long.startsWith(text)).at(-1)!;
    expect(fakeTokens(sent)).toBeLessThanOrEqual(200);
    const stored = JSON.parse(longChunk.embedding!) as number[];
    hashVector(sent, 8).forEach((x, i) => expect(stored[i]).toBeCloseTo(x, 5));

    const answers = answersFor('Large', from);
    expect(answers.filter((answer) => answer.status === 200).every((answer) => answer.inputs <= 5)).toBe(
      true,
    );
    // Once refused, later requests hold at most the five inputs the server named.
    const firstRefusal = answers.findIndex((answer) => answer.status === 400 && answer.inputs > 5);
    expect(firstRefusal).toBeGreaterThanOrEqual(0);
    expect(answers.slice(firstRefusal + 1).filter((answer) => answer.inputs > 5)).toHaveLength(0);
    expect(t.output()).toContain('the embeddings endpoint refused a request as too large');
    expect(t.output()).toContain('a passage too long for the embedding model was embedded truncated');
  }, 120_000);
});
