import { type ChildProcess, spawn } from 'node:child_process';
import { createDataset, type DocumentBody, waitForDocument } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import {
  bearer,
  type CreatedKey,
  freePort,
  startProcess,
  startTestApp,
  stopProcess,
  type TestApp,
} from './utils/test-app.js';
import { until } from './utils/until.js';

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
        const stats = await t.sql.query('SELECT chunk_count::int FROM dataset_index WHERE dataset_id = $1', [
          datasetId,
        ]);
        expect(stats.rows[0].chunk_count).toBe(done.chunks_created);
      } finally {
        await second.stop();
      }
    } finally {
      await t.close();
    }
  }, 120_000);

  it('survives a job that Bull fails for stalling too often, and the sweep still finishes its document', async () => {
    const t = await startTestApp({ ROLE: 'api', ...openAiEnv(openai), ...FAST_RECOVERY });
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      // Its workers hang in the embedding stage (not at their start-up probe) until they are killed.
      const ours = (text: string) => text.includes('outlives its workers');
      const asked = () => openai.inputs.filter(ours).length;
      openai.hangs = ours;
      const upload = await t.http
        .post(`/v1/datasets/${datasetId}/documents`)
        .set(bearer(key))
        .send({ content: 'A sentence that outlives its workers. '.repeat(50) })
        .expect(201);
      const documentId = upload.body.document_id as string;

      // Bull allows a job two stalls (maxStalledCount); the third, seen by the next worker, fails it.
      // removeOnFail has deleted it by then, so that worker's 'failed' listener is given no job.
      for (let kill = 1; kill <= 3; kill++) {
        const before = asked();
        const worker = await startProcess(t, { ROLE: 'worker' }, 'ingestion worker started');
        await until(() => asked() > before, 30_000);
        await worker.stop('SIGKILL');
      }

      openai.hangs = () => false;
      const survivor = await startProcess(t, { ROLE: 'worker' }, 'ingestion worker started');
      try {
        const deadline = Date.now() + 60_000;
        let current = await getDocument(t, key, datasetId, documentId);
        while (current.status === 'processing' && survivor.alive() && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          current = await getDocument(t, key, datasetId, documentId);
        }
        expect({ alive: survivor.alive(), crash: /TypeError.*/.exec(survivor.output())?.[0] }).toEqual({
          alive: true,
          crash: undefined,
        });
        expect(survivor.output()).toContain('job stalled more than allowable limit');
        // The sweep found the run without a live job and queued it again.
        expect(current).toMatchObject({ status: 'ready' });
        const { rows } = await t.sql.query('SELECT recoveries FROM documents WHERE id = $1', [documentId]);
        expect(rows[0].recoveries).toBe(1);
      } finally {
        await survivor.stop();
      }
    } finally {
      openai.hangs = () => false;
      await t.close();
    }
  }, 180_000);
});

async function getDocument(
  t: TestApp,
  key: CreatedKey,
  datasetId: string,
  documentId: string,
): Promise<DocumentBody> {
  const response = await t.http
    .get(`/v1/datasets/${datasetId}/documents/${documentId}`)
    .set(bearer(key))
    .expect(200);
  return response.body as DocumentBody;
}

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
    // A Redis of its own, to stop and start: a single one, whichever Redis the other specs use.
    const t = await startTestApp({
      REDIS_URL: `redis://127.0.0.1:${port}`,
      REDIS_CLUSTER: 'false',
      ...FAST_RECOVERY,
    });
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
