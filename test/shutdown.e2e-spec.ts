import http from 'node:http';
import { addDocument, createDataset } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI } from './utils/fake-openai.js';
import { bearer, type CreatedKey, type TestApp, startTestApp } from './utils/test-app.js';
import { until } from './utils/until.js';

/** The first 503 the server answers to GET /health, asked again until it does. */
async function firstRefusal(app: TestApp, timeoutMs = 1_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const response = await app.http.get('/health').catch(() => null);
    if (response?.status === 503) return response;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the server never refused a request');
}

describe('Shutdown', () => {
  let openai: FakeOpenAI;
  let t: TestApp | undefined;

  beforeAll(async () => (openai = await startFakeOpenAI(8)));
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });
  afterAll(() => openai.close());

  /** An app embedding through the fake server, with one searchable document. */
  async function appWithDocument(env: Record<string, string> = {}) {
    openai.delayMs = 0;
    t = await startTestApp({ ...openAiEnv(openai), ...env });
    const key = await t.createApiKey();
    const datasetId = await createDataset(t.http, key);
    await addDocument(t.http, key, datasetId, {
      content: 'A graceful shutdown keeps every search under way whole.',
    });
    return { app: t, key, datasetId };
  }

  function search(app: TestApp, key: CreatedKey, datasetId: string, query: string) {
    return app.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, query })
      .then((response) => response);
  }

  it('finishes the searches under way before it closes the pools, and refuses new requests with 503', async () => {
    const { app, key, datasetId } = await appWithDocument();

    // A search whose client gives up while its query is embedded (1.5 s): its handler goes on.
    openai.delayMs = 1_500;
    const abandoned = http.request(`${app.url}/v1/mcp/query`, {
      method: 'POST',
      headers: { ...bearer(key), 'Content-Type': 'application/json' },
    });
    abandoned.on('error', () => undefined);
    abandoned.end(JSON.stringify({ dataset_id: datasetId, query: 'abandoned search' }));
    await until(() => openai.inputs.includes('abandoned search'), 5_000);
    const abandonedEmbeddingStarted = Date.now();
    abandoned.destroy();
    // And one whose client waits, embedded sooner (0.3 s).
    openai.delayMs = 300;
    const underWay = search(app, key, datasetId, 'graceful shutdown');
    await until(() => openai.inputs.includes('graceful shutdown'), 5_000);
    const exited = app.terminate();

    // While it waits for those searches, the server refuses new requests, in the error body, and
    // closes their connections.
    const refused = await firstRefusal(app);
    expect(refused.body).toEqual({ error: expect.any(String), code: 'shutting_down' });
    expect(refused.headers.connection).toBe('close');
    expect(refused.headers['retry-after']).toBe('1');

    const answered = await underWay;
    expect(answered.status).toBe(200);
    expect(answered.body.results).toHaveLength(1);
    expect(await exited).toEqual({ code: null, signal: 'SIGTERM' }); // not SIGKILL: it shut down
    // The abandoned search ran to its end, past its embedding, before the pools closed and the
    // process exited; the other answer alone would have let it exit a second earlier.
    expect(Date.now() - abandonedEmbeddingStarted).toBeGreaterThanOrEqual(1_400);
    expect(app.output()).not.toContain('Cannot use a pool after calling end');
    expect(app.output()).not.toContain('"level":50');
  });

  it('stops waiting after SHUTDOWN_GRACE_SECONDS, closing the connections still busy', async () => {
    const { app, key, datasetId } = await appWithDocument({ SHUTDOWN_GRACE_SECONDS: '1' });
    openai.delayMs = 10_000;
    const stuck = search(app, key, datasetId, 'a search that outlives the grace time').catch(
      (error: unknown) => error,
    );
    await until(() => openai.inputs.includes('a search that outlives the grace time'), 5_000);
    const started = Date.now();
    // terminate() sends SIGKILL after 5 s: an exit by SIGTERM means the shutdown itself ended.
    expect(await app.terminate()).toEqual({ code: null, signal: 'SIGTERM' });
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(app.output()).toContain('shutting down with requests still under way');
    expect(await stuck).toMatchObject({ code: 'ECONNRESET' }); // its connection was closed
  });
});
