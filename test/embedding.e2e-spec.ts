import { readFileSync } from 'node:fs';
import { addDocument, createDataset, waitForDocument } from './utils/documents.js';
import { type FakeOpenAI, hashVector, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { healthWhile, scifactAbstracts } from './utils/responsiveness.js';
import {
  bearer,
  freePort,
  runUntilExit,
  startProcess,
  startTestApp,
  type TestApp,
} from './utils/test-app.js';
import { until } from './utils/until.js';

describe('Embedding providers', () => {
  let openai: FakeOpenAI;
  beforeAll(async () => (openai = await startFakeOpenAI(8)));
  afterAll(() => openai.close());

  it('embeds every chunk through an OpenAI-compatible server and records the model on the dataset', async () => {
    const t = await startTestApp(openAiEnv(openai));
    try {
      expect((await t.http.get('/ready').expect(200)).body.search).toEqual({
        mode: 'hybrid',
        provider: 'openai',
        model: 'fake-embedder',
        dimensions: 8,
      });
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      const upload = await addDocument(t.http, key, datasetId, {
        content: 'Vectors come from the fake server.',
      });

      const { rows } = await t.sql.query<{ content: string; embedding: string }>(
        'SELECT content, embedding::text FROM chunks WHERE document_id = $1',
        [upload.document_id],
      );
      expect(rows).toHaveLength(1);
      const stored = JSON.parse(rows[0].embedding) as number[];
      hashVector(rows[0].content, 8).forEach((value, i) => expect(stored[i]).toBeCloseTo(value, 5));
      expect(openai.inputs).toContain(rows[0].content);
      const dataset = await t.sql.query(
        'SELECT embedding_model, embedding_dimensions FROM dataset_index WHERE dataset_id = $1',
        [datasetId],
      );
      expect(dataset.rows[0]).toEqual({ embedding_model: 'fake-embedder', embedding_dimensions: 8 });
      const index = await t.sql.query(
        "SELECT indexname FROM pg_indexes WHERE indexname = 'chunks_embedding_8_idx'",
      );
      expect(index.rows).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('keeps a chunk’s vector in its row, not in the TOAST table (migration 7)', async () => {
    // A real abstract of about 1,700 characters in one chunk, with a 384-dimension vector: a row of
    // about 3.4 KB, which PostgreSQL's defaults split even after compressing the text, moving the
    // vector out of the row.
    const abstract = readFileSync('../shared/datasets/scifact/corpus.jsonl', 'utf8')
      .split('\n')
      .map((line) => (line ? (JSON.parse(line) as { text: string }).text : ''))
      .find((text) => text.length >= 1_700)!
      .slice(0, 1_700);
    const wide = await startFakeOpenAI(384);
    const t = await startTestApp({ ...openAiEnv(wide), CHUNK_TOKENS: '2048' });
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      const upload = await addDocument(t.http, key, datasetId, { content: abstract });
      const { rows } = await t.sql.query(
        `SELECT count(*)::int AS chunks, min(pg_column_size(embedding)) AS vector_bytes
           FROM chunks WHERE document_id = $1`,
        [upload.document_id],
      );
      expect(rows[0]).toEqual({ chunks: 1, vector_bytes: 8 + 4 * 384 }); // header and dimensions, then floats
      const toast = await t.sql.query(
        `SELECT reltoastrelid::regclass::text AS name FROM pg_class WHERE relname = 'chunks'`,
      );
      const stored = await t.sql.query(`SELECT count(*)::int AS values FROM ${toast.rows[0].name}`);
      expect(stored.rows[0].values).toBe(0);
    } finally {
      await t.close();
      await wide.close();
    }
  });

  it('writes 2,200 embedded chunks in batches, each chunk with its own vector', async () => {
    const wide = await startFakeOpenAI(384); // 1,041 chunks of 384 dimensions a statement: three here
    const t = await startTestApp(openAiEnv(wide));
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      const markdown = Array.from({ length: 2_200 }, (_, i) => `# Part ${i}\n\nsection ${i}\n`).join('\n');
      const uploaded = await t.http
        .post(`/v1/datasets/${datasetId}/documents`)
        .set(bearer(key))
        .attach('file', Buffer.from(markdown), 'parts.md')
        .expect(201);
      const ready = await waitForDocument(t.http, key, datasetId, uploaded.body.document_id, 120_000);
      expect(ready).toMatchObject({ status: 'ready', chunks_created: 2_200 });
      const { rows } = await t.sql.query<{ ordinal: number; content: string; embedding: string }>(
        `SELECT ordinal, content, embedding::text AS embedding FROM chunks
          WHERE document_id = $1 AND ordinal = ANY($2) ORDER BY ordinal`,
        [uploaded.body.document_id, [0, 1_040, 1_041, 2_081, 2_082, 2_199]],
      );
      expect(rows.map((r) => r.ordinal)).toEqual([0, 1_040, 1_041, 2_081, 2_082, 2_199]);
      for (const row of rows) {
        expect(row.content).toBe(`# Part ${row.ordinal}\n\nsection ${row.ordinal}`);
        const stored = JSON.parse(row.embedding) as number[];
        const expected = hashVector(row.content, 384);
        expect(Math.max(...stored.map((x, i) => Math.abs(x - expected[i])))).toBeLessThan(1e-6);
      }
    } finally {
      await t.close();
      await wide.close();
    }
  }, 150_000);

  it('re-embeds a keyword-only dataset with the admin command, making it hybrid', async () => {
    const t = await startTestApp({ EMBEDDING_PROVIDER: 'none' });
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      const done = await addDocument(t.http, key, datasetId, {
        content: 'First indexed without vectors. '.repeat(60),
      });
      const missing = async () =>
        (
          await t.sql.query(
            'SELECT count(*)::int AS n FROM chunks WHERE document_id = $1 AND embedding IS NULL',
            [done.document_id],
          )
        ).rows[0].n as number;
      expect(await missing()).toBe(done.chunks_created);

      // The embedding server holds its answer, so that the command can be watched while it runs.
      openai.delayMs = 1_500;
      const asked = openai.inputs.length;
      // With a pool of one connection: the run's lock is held by a session outside the pool, which a
      // pool of one would otherwise wait for (10 s, then a failure).
      const running = t.cliWith(
        { ...openAiEnv(openai), DATABASE_POOL_SIZE: '1' },
        'datasets',
        'reembed',
        datasetId,
      );
      const state = () =>
        t.sql
          .query('SELECT embedding_model, next_embedding_model FROM dataset_index WHERE dataset_id = $1', [
            datasetId,
          ])
          .then((r) => r.rows[0] as { embedding_model: string | null; next_embedding_model: string | null });
      // (The provider's start-up probe comes first; wait for the chunks themselves.)
      await until(() => openai.inputs.slice(asked).some((text) => text.startsWith('First indexed')));
      // Mid-run: the new generation is being built, and no model recorded before every vector is written.
      expect(await state()).toEqual({ embedding_model: null, next_embedding_model: 'fake-embedder' });
      const result = await running;
      openai.delayMs = 0;
      expect(await state()).toEqual({ embedding_model: 'fake-embedder', next_embedding_model: null });
      expect(result).toEqual({
        dataset_id: datasetId,
        chunks: done.chunks_created,
        model: 'fake-embedder',
        dimensions: 8,
      });
      expect(await missing()).toBe(0);
      const dataset = await t.sql.query(
        'SELECT embedding_model, embedding_dimensions FROM dataset_index WHERE dataset_id = $1',
        [datasetId],
      );
      expect(dataset.rows[0]).toEqual({ embedding_model: 'fake-embedder', embedding_dimensions: 8 });
    } finally {
      await t.close();
    }
  });

  it('embeds at start the chunks indexed keyword-only, and only those, in datasets of no other model', async () => {
    const t = await startTestApp({ EMBEDDING_PROVIDER: 'none' });
    try {
      const key = await t.createApiKey();
      const add = async (datasetId: string, content: string) =>
        (await addDocument(t.http, key, datasetId, { content })).document_id;
      const keywordOnly = await createDataset(t.http, key);
      await add(keywordOnly, 'Indexed before any model. '.repeat(40));
      // A catch-up stopped half way: the model recorded, one document's chunks embedded, one's not.
      const partly = await createDataset(t.http, key);
      const embeddedBefore = await add(partly, 'Embedded by the first pass. '.repeat(40));
      await add(partly, 'Left for the next start. '.repeat(40));
      const marker = `[${[1, 0, 0, 0, 0, 0, 0, 0].join(',')}]`;
      await t.sql.query(
        `UPDATE dataset_index SET embedding_model = 'fake-embedder', embedding_dimensions = 8 WHERE dataset_id = $1`,
        [partly],
      );
      await t.sql.query('UPDATE chunks SET embedding = $2::vector WHERE document_id = $1', [
        embeddedBefore,
        marker,
      ]);
      // Vectors of another model: `datasets reembed` decides, not the catch-up.
      const otherModel = await createDataset(t.http, key);
      await add(otherModel, 'Another model’s dataset. '.repeat(40));
      await t.sql.query(
        `UPDATE dataset_index SET embedding_model = 'other-embedder', embedding_dimensions = 8 WHERE dataset_id = $1`,
        [otherModel],
      );

      const asked = openai.inputs.length;
      const worker = await startProcess(
        t,
        { ...openAiEnv(openai), ROLE: 'worker' },
        'ingestion worker started',
      );
      try {
        const caughtUp = () =>
          worker.output().split('dataset indexed keyword-only is now embedded').length - 1;
        await until(() => caughtUp() === 2, 30_000);
        const chunks = async (datasetId: string) =>
          (
            await t.sql.query<{ content: string; embedding: string | null; model: string | null }>(
              `SELECT c.content, c.embedding::text AS embedding, i.embedding_model AS model
                 FROM chunks c JOIN dataset_index i ON i.dataset_seq = c.dataset_seq WHERE i.dataset_id = $1`,
              [datasetId],
            )
          ).rows;
        for (const row of await chunks(keywordOnly)) {
          expect(row).toMatchObject({ model: 'fake-embedder', embedding: expect.stringMatching(/^\[/) });
        }
        for (const row of await chunks(partly)) {
          if (row.content.startsWith('Embedded by the first pass')) expect(row.embedding).toBe(marker);
          else expect(row.embedding).toMatch(/^\[/);
        }
        for (const row of await chunks(otherModel)) expect(row.embedding).toBeNull();
        const sent = openai.inputs.slice(asked);
        expect(sent.some((text) => text.startsWith('Indexed before any model'))).toBe(true);
        expect(sent.some((text) => text.startsWith('Left for the next start'))).toBe(true);
        expect(sent.some((text) => text.startsWith('Embedded by the first pass'))).toBe(false);
        expect(sent.some((text) => text.startsWith('Another model'))).toBe(false);
      } finally {
        await worker.stop();
      }
    } finally {
      await t.close();
    }
  }, 60_000);

  /** A command's outcome: its JSON result, or its exit code and standard error. */
  const settle = (run: Promise<unknown>): Promise<{ result?: unknown; code?: number; stderr?: string }> =>
    run.then(
      (result) => ({ result }),
      (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr }),
    );

  /**
   * A dataset of one document of 300 paragraphs of about 700 characters, one chunk each at
   * `ONE_PARAGRAPH_CHUNKS` (two pages of the command), and a first re-embedding of it (8 dimensions) under way: it waits for `openai` in its
   * second page (until `openai.hangs` is lifted, then its request times out after 30 s and is sent
   * again), with its first page of vectors written and no transaction open.
   */
  /** Chunks of 256 estimated tokens, which hold one of `reembeddingUnderWay`'s paragraphs and not two. */
  const ONE_PARAGRAPH_CHUNKS = { CHUNK_TOKENS: '256' };

  async function reembeddingUnderWay(t: TestApp) {
    const key = await t.createApiKey();
    const datasetId = await createDataset(t.http, key);
    const paragraph = (i: number) =>
      `Paragraph ${i} of a long report. ${'Words about rivers and hills. '.repeat(22)}`;
    const text = Array.from({ length: 300 }, (_, i) => paragraph(i)).join('\n\n');
    const done = await addDocument(t.http, key, datasetId, { content: text });
    expect(done.chunks_created).toBeGreaterThan(256);
    const { rows } = await t.sql.query(
      'SELECT content FROM chunks WHERE document_id = $1 ORDER BY seq OFFSET 256 LIMIT 1',
      [done.document_id],
    );
    const secondPage = rows[0].content as string;
    openai.hangs = (input) => input === secondPage;
    const asked = openai.inputs.length; // another test may have sent the same paragraphs
    const first = settle(t.cliWith(openAiEnv(openai), 'datasets', 'reembed', datasetId));
    await until(() => openai.inputs.slice(asked).includes(secondPage), 30_000);
    return { datasetId, chunks: done.chunks_created, first };
  }

  /** The chunks' vector dimensions with their counts, and the model the dataset records. */
  async function vectorsOf(t: TestApp, datasetId: string) {
    const dimensions = await t.sql.query(
      `SELECT vector_dims(embedding) AS dims, count(*)::int AS n FROM chunks
        WHERE dataset_seq = (SELECT seq FROM datasets WHERE id = $1) GROUP BY 1 ORDER BY 1`,
      [datasetId],
    );
    const dataset = await t.sql.query(
      'SELECT embedding_model, embedding_dimensions, next_embedding_model FROM dataset_index WHERE dataset_id = $1',
      [datasetId],
    );
    return { dimensions: dimensions.rows, dataset: dataset.rows[0] };
  }

  it('refuses a second re-embedding of a dataset while one runs, so two models never share its vectors', async () => {
    const t = await startTestApp({ EMBEDDING_PROVIDER: 'none', ...ONE_PARAGRAPH_CHUNKS });
    const other = await startFakeOpenAI(12);
    const otherModel = { ...openAiEnv(other), EMBEDDING_MODEL: 'other-embedder' };
    try {
      const { datasetId, chunks, first } = await reembeddingUnderWay(t);
      // A second run, of another model (12 dimensions), while the first one is under way.
      const second = await settle(t.cliWith(otherModel, 'datasets', 'reembed', datasetId));
      openai.hangs = () => false;
      expect(await first).toMatchObject({ result: { chunks, model: 'fake-embedder' } });

      expect(await vectorsOf(t, datasetId)).toEqual({
        dimensions: [{ dims: 8, n: chunks }],
        dataset: { embedding_model: 'fake-embedder', embedding_dimensions: 8, next_embedding_model: null },
      });
      expect(second).toMatchObject({ code: 1 });
      expect(JSON.parse(second.stderr!)).toEqual({
        error: expect.stringContaining('already being re-embedded'),
        code: 'reembed_in_progress',
      });

      // Once the first run has ended, the dataset can be re-embedded again.
      expect(await t.cliWith(otherModel, 'datasets', 'reembed', datasetId)).toMatchObject({
        chunks,
        model: 'other-embedder',
        dimensions: 12,
      });
    } finally {
      openai.hangs = () => false;
      await other.close();
      await t.close();
    }
  }, 150_000);

  it('stops a re-embedding whose lock session ended, before it writes again, so a run that took over is alone', async () => {
    const t = await startTestApp({ EMBEDDING_PROVIDER: 'none', ...ONE_PARAGRAPH_CHUNKS });
    // The same model served by a server that does not hang.
    const other = await startFakeOpenAI(8);
    try {
      const { datasetId, chunks, first } = await reembeddingUnderWay(t);
      // The session holding the first run's lock ends (a timeout, a failover, an administrator) while
      // its process runs on; a second run takes the lock, and the build where the first left it, to
      // its end: the first run's page of vectors is not embedded again.
      const ended = await t.sql.query(
        `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
          WHERE application_name = 'dataset-search reembed' AND datname = current_database()`,
      );
      expect(ended.rows).toEqual([{ ended: true }]);
      expect(await t.cliWith(openAiEnv(other), 'datasets', 'reembed', datasetId)).toMatchObject({
        chunks: Number(chunks) - 256,
        model: 'fake-embedder',
        dimensions: 8,
      });

      // The first run's request is answered: it writes nothing more.
      openai.hangs = () => false;
      const stopped = await first;
      expect(stopped).toMatchObject({ code: 1 });
      expect(JSON.parse(stopped.stderr!)).toEqual({
        error: expect.stringContaining('lost its lock'),
        code: 'reembed_lock_lost',
      });
      expect(await vectorsOf(t, datasetId)).toEqual({
        dimensions: [{ dims: 8, n: chunks }],
        dataset: { embedding_model: 'fake-embedder', embedding_dimensions: 8, next_embedding_model: null },
      });
    } finally {
      openai.hangs = () => false;
      await other.close();
      await t.close();
    }
  }, 150_000);

  it('refuses to start when an explicitly configured provider does not work', async () => {
    const closed = await freePort();
    const { code, output } = await runUntilExit({
      EMBEDDING_PROVIDER: 'openai',
      OPENAI_API_KEY: 'test-key',
      OPENAI_BASE_URL: `http://127.0.0.1:${closed}/v1`,
    });
    expect(code).toBe(1);
    expect(output).toMatch(/Connection error|ECONNREFUSED/);
  }, 60_000);

  it('runs keyword-only under auto when no provider can be had, and says so', async () => {
    const t = await startTestApp({ EMBEDDING_PROVIDER: 'auto', MODELS_DIR: '/nonexistent' });
    try {
      const ready = await t.http.get('/ready').expect(200);
      expect(ready.body.search).toMatchObject({
        mode: 'keyword_only',
        provider: null,
        reason: expect.stringContaining('local model'),
      });
      await t.waitForOutput('NO EMBEDDING PROVIDER');
    } finally {
      await t.close();
    }
  });

  it('embeds a query (in its worker thread) exactly as the same text is embedded as a passage', async () => {
    const t = await startTestApp({ EMBEDDING_PROVIDER: 'local', EMBEDDING_MODEL: 'synthetic/bert-L6-H384' });
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      const text = 'Mitochondria produce most of the energy of the cell.';
      await addDocument(t.http, key, datasetId, { content: text });
      const ask = (query: string) =>
        t.http
          .post('/v1/mcp/query')
          .set(bearer(key))
          .send({ dataset_id: datasetId, query, mode: 'semantic', explain: true })
          .expect(200);
      // Concurrent queries each get their own vector back, whatever order the worker answers in.
      const [same, other] = await Promise.all([ask(text), ask('Stock markets fell on Tuesday.')]);
      expect(same.body.results[0].semantic_score).toBeGreaterThan(0.9999);
      expect(other.body.results[0].semantic_score).toBeLessThan(0.999);

      // An authenticated search alone embeds its query before its request is checked; an anonymous
      // one (a public dataset) only after. Both vectors are the query's own.
      await t.http.patch(`/v1/datasets/${datasetId}`).set(bearer(key)).send({ is_public: true }).expect(200);
      const query = 'Where does the energy of the cell come from?';
      const early = await ask(query);
      const checked = await t.http
        .post('/v1/mcp/query')
        .send({ dataset_id: datasetId, query, mode: 'semantic', explain: true })
        .expect(200);
      expect(early.body.results[0].semantic_score).toBeLessThan(0.9999);
      expect(early.body.results[0].semantic_score).toBeCloseTo(checked.body.results[0].semantic_score, 6);
    } finally {
      await t.close();
    }
  });

  it('keeps answering requests while it embeds a document’s passages (the model runs in worker threads)', async () => {
    const t = await startTestApp({ EMBEDDING_PROVIDER: 'local', EMBEDDING_MODEL: 'synthetic/bert-L6-H384' });
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      // Real abstracts, about 80 chunks of up to 512 tokens: batches of 16 (EMBEDDING_BATCH_SIZE)
      // for the model, and a text long enough that chunking it by the model’s tokenizer on the main
      // thread would be felt.
      const content = scifactAbstracts(80);
      const {
        result: document,
        slowestMs,
        elapsedMs,
      } = await healthWhile(t, async () => {
        const upload = await t.http
          .post(`/v1/datasets/${datasetId}/documents`)
          .set(bearer(key))
          .send({ content })
          .expect(201);
        return waitForDocument(t.http, key, datasetId, upload.body.document_id as string);
      });

      expect(document.status).toBe('ready');
      const batches = Math.ceil(document.chunks_created! / 16);
      expect(batches).toBeGreaterThanOrEqual(3);
      // A batch run on the main thread held every request of the process for the whole run, most of
      // the time a batch takes: here no request waits for more than a quarter of it.
      expect(slowestMs).toBeLessThan(elapsedMs / batches / 4);
    } finally {
      await t.close();
    }
  }, 90_000);

  it('uses the local model under auto when one is in MODELS_DIR', async () => {
    const t = await startTestApp({ EMBEDDING_PROVIDER: 'auto', EMBEDDING_MODEL: 'synthetic/bert-L6-H384' });
    try {
      expect((await t.http.get('/ready').expect(200)).body.search).toEqual({
        mode: 'hybrid',
        provider: 'local',
        model: 'synthetic/bert-L6-H384',
        dimensions: 384,
      });
    } finally {
      await t.close();
    }
  });
});
