import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODEL_FILES } from '../src/modules/embeddings/model-download.js';
import { addDocument, createDataset } from './utils/documents.js';
import { type FakeHub, startFakeHub } from './utils/fake-hub.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { until } from './utils/until.js';

const MODEL = 'synthetic/bert-L12-H384';
const CONTENT = 'Mitochondria turn nutrients into energy for the cell. '.repeat(20);

interface Result {
  content: string;
  semantic_score?: number;
  keyword_score?: number;
}

/**
 * A first start with no model in MODELS_DIR and a hub within reach (a fake on 127.0.0.1 serving the
 * synthetic model): the server answers keyword-only while the model downloads, then hybrid.
 */
describe('The embedding model downloaded at first start', () => {
  let hub: FakeHub;
  let modelsDir: string;
  let t: TestApp;

  beforeAll(async () => {
    hub = await startFakeHub(join(process.cwd(), '.cache', 'models', MODEL), MODEL, MODEL_FILES);
  });
  afterAll(() => hub.close());
  beforeEach(async () => {
    modelsDir = await mkdtemp(join(tmpdir(), 'models-'));
  });
  afterEach(async () => {
    await t?.close();
    hub.corrupt.clear();
    await rm(modelsDir, { recursive: true, force: true });
  });

  const start = () =>
    startTestApp({
      EMBEDDING_PROVIDER: 'auto',
      EMBEDDING_MODEL: MODEL,
      EMBEDDING_ALLOW_DOWNLOAD: 'true',
      MODEL_HUB_URL: hub.url,
      MODELS_DIR: modelsDir,
    });
  const ready = async () =>
    (await t.http.get('/ready').expect(200)).body.search as { mode: string; reason?: string };
  const search = async (key: CreatedKey, datasetId: string) =>
    (
      await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, query: 'energy for the cell', explain: true })
        .expect(200)
    ).body.results as Result[];

  it('answers keyword-only while the model downloads, then hybrid, with the documents added meanwhile embedded', async () => {
    hub.largeFileMs = 8_000;
    t = await start();
    // Listening while the large file is still on its way.
    expect(await ready()).toMatchObject({
      mode: 'keyword_only',
      reason: `the local model ${MODEL} is being downloaded`,
    });
    const key = await t.createApiKey();
    const datasetId = await createDataset(t.http, key);
    const document = await addDocument(t.http, key, datasetId, { content: CONTENT });
    expect(document.status).toBe('ready');
    const before = await search(key, datasetId);
    expect(before[0]).toMatchObject({ content: CONTENT.trim(), keyword_score: expect.any(Number) });
    expect(before[0].semantic_score).toBeUndefined();
    expect((await ready()).mode).toBe('keyword_only');

    await until(async () => (await ready()).mode === 'hybrid', 60_000);
    expect(t.output()).toMatch(
      /"file":"onnx\/model_quantized.onnx".*"percent":50.*"msg":"downloading the embedding model"/,
    );
    expect(t.output()).toContain('"msg":"embedding model downloaded"');
    expect(await readdir(join(modelsDir, MODEL))).toEqual(expect.arrayContaining(['config.json', 'onnx']));

    // The document indexed keyword-only gets its vectors, and the dataset the model's name.
    await until(async () => {
      const { rows } = await t.sql.query(
        'SELECT embedding_model, (SELECT count(*)::int FROM chunks c WHERE c.dataset_seq = i.dataset_seq AND embedding IS NULL) AS missing FROM dataset_index i WHERE dataset_id = $1',
        [datasetId],
      );
      return rows[0].embedding_model === MODEL && rows[0].missing === 0;
    }, 60_000);
    await t.waitForOutput('dataset indexed keyword-only is now embedded');
    const after = await search(key, datasetId);
    expect(after[0]).toMatchObject({
      content: CONTENT.trim(),
      keyword_score: expect.any(Number),
      semantic_score: expect.any(Number),
    });
  }, 120_000);

  it('refuses a file that does not match its checksum, leaves nothing in MODELS_DIR, and stays keyword-only', async () => {
    hub.largeFileMs = 0;
    hub.corrupt.add('onnx/model_quantized.onnx');
    t = await start();
    await t.waitForOutput('NO EMBEDDING PROVIDER', 30_000);
    expect(t.output()).toContain(
      'onnx/model_quantized.onnx of synthetic/bert-L12-H384 does not match its checksum',
    );
    expect(await readdir(modelsDir)).toEqual([]);
    // /ready is open to anyone: no URL, the log says why.
    const { reason } = await ready();
    expect(reason).toContain('could not be downloaded and loaded (see the log)');
    expect(reason).not.toContain(hub.url);
    const key = await t.createApiKey();
    const datasetId = await createDataset(t.http, key);
    await addDocument(t.http, key, datasetId, { content: CONTENT });
    expect((await search(key, datasetId))[0]).toMatchObject({ keyword_score: expect.any(Number) });
  }, 60_000);
});
