import { type ChildProcess, spawn } from 'node:child_process';
import { createDataset, waitForDocument } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { bearer, freePort, startProcess, startTestApp, stopProcess } from './utils/test-app.js';

/** Settings that make a dead worker or a lost job noticed in seconds rather than minutes. */
const FAST_RECOVERY = { QUEUE_LOCK_SECONDS: '2', INGEST_STALE_AFTER_SECONDS: '5' };

describe('Recovery from a worker killed mid-job', () => {
  let openai: FakeOpenAI;
  beforeAll(async () => (openai = await startFakeOpenAI()));
  afterAll(() => openai.close());

  it('runs the document again on another worker; it ends ready, indexed once', async () => {
    const embedding = openAiEnv(openai);
    const t = await startTestApp({ ROLE: 'api', ...embedding, ...FAST_RECOVERY });
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      const first = await startProcess(t, { ROLE: 'worker' }, 'ingestion worker started');

      // The embedding endpoint hangs, so the job is surely mid-way when its worker is killed.
      openai.delayMs = 60_000;
      const upload = await t.http
        .post(`/v1/datasets/${datasetId}/documents`)
        .set(bearer(key))
        .send({ content: 'A sentence worth keeping. '.repeat(400) })
        .expect(201);
      const documentId = upload.body.document_id as string;
      const deadline = Date.now() + 15_000;
      for (;;) {
        const current = await t.http
          .get(`/v1/datasets/${datasetId}/documents/${documentId}`)
          .set(bearer(key));
        if (current.body.progress?.stage === 'embedding') break;
        if (Date.now() > deadline)
          throw new Error(`never reached embedding: ${JSON.stringify(current.body)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await first.stop('SIGKILL');

      openai.delayMs = 0;
      const second = await startProcess(t, { ROLE: 'worker' }, 'ingestion worker started');
      try {
        const done = await waitForDocument(t.http, key, datasetId, documentId, 60_000);
        expect(done.status).toBe('ready');
        const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM chunks WHERE document_id = $1', [
          documentId,
        ]);
        expect(rows[0].n).toBe(done.chunks_created);
        const stats = await t.sql.query('SELECT chunk_count::int FROM datasets WHERE id = $1', [datasetId]);
        expect(stats.rows[0].chunk_count).toBe(done.chunks_created);
      } finally {
        await second.stop();
      }
    } finally {
      await t.close();
    }
  }, 120_000);
});

describe('Recovery from a Redis outage', () => {
  it('accepts uploads while Redis is down and processes them once it is back', async () => {
    const port = await freePort();
    const startRedis = () =>
      spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        {
          stdio: 'ignore',
        },
      );
    let redis: ChildProcess = startRedis();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const t = await startTestApp({ REDIS_URL: `redis://127.0.0.1:${port}`, ...FAST_RECOVERY });
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);

      await stopProcess(redis);
      const upload = await t.http
        .post(`/v1/datasets/${datasetId}/documents`)
        .set(bearer(key))
        .send({ content: 'Written while Redis was down.' })
        .timeout(15_000)
        .expect(201);
      await t.http.get('/ready').expect(503);

      redis = startRedis();
      const done = await waitForDocument(t.http, key, datasetId, upload.body.document_id as string, 60_000);
      expect(done).toMatchObject({ status: 'ready', chunks_created: 1 });
      await t.http.get('/ready').expect(200);
    } finally {
      await t.close();
      await stopProcess(redis);
    }
  }, 120_000);
});
