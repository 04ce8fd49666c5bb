import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { jest } from '@jest/globals';
import { pino } from 'pino';
import { coreSection } from 'src/config/core.config.js';
import { readSection } from 'src/config/define.js';
import { embeddingsSection } from 'src/modules/embeddings/embeddings.config.js';
import type { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { MODEL_FILES } from 'src/modules/embeddings/model-download.js';
import { type FakeHub, startFakeHub } from '../../../test/utils/fake-hub.js';
import { strictMock } from '../../../test/utils/strict-mock.js';
import { until } from '../../../test/utils/until.js';

/**
 * `auto` with no model in MODELS_DIR: the model is downloaded in the background from a fake hub
 * (files of a few bytes), and its loading is stood in for (`local`), as the model's threads run only
 * from the build.
 */
describe('EmbeddingService, with a model downloaded in the background', () => {
  let hub: FakeHub;
  let files: string;
  let modelsDir: string;
  let lines: { msg: string; err?: { message: string } }[];
  let close: jest.Mock<() => Promise<void>>;
  let load: jest.SpiedFunction<() => Promise<EmbeddingProvider>>;
  const provider = () =>
    ({
      name: 'local',
      model: 'owner/model',
      dimensions: 4,
      maxTokens: 512,
      close,
    }) as unknown as EmbeddingProvider;

  beforeAll(async () => {
    files = await mkdtemp(join(tmpdir(), 'hub-files-'));
    for (const file of MODEL_FILES) {
      await mkdir(dirname(join(files, file)), { recursive: true });
      await writeFile(join(files, file), `the bytes of ${file}`);
    }
    hub = await startFakeHub(files, 'owner/model', MODEL_FILES);
  });
  afterAll(async () => {
    await hub.close();
    await rm(files, { recursive: true, force: true });
  });
  beforeEach(async () => {
    modelsDir = await mkdtemp(join(tmpdir(), 'models-'));
    lines = [];
    close = jest.fn(() => Promise.resolve());
    load = jest
      .spyOn(EmbeddingService.prototype as unknown as { local(): Promise<EmbeddingProvider> }, 'local')
      .mockImplementation(() => Promise.resolve(provider()));
  });
  afterEach(async () => {
    load.mockRestore();
    hub.corrupt.clear();
    hub.requests.length = 0;
    await rm(modelsDir, { recursive: true, force: true });
  });

  const create = () =>
    new EmbeddingService(
      readSection(embeddingsSection, {
        EMBEDDING_PROVIDER: 'auto',
        EMBEDDING_MODEL: 'owner/model',
        EMBEDDING_ALLOW_DOWNLOAD: 'true',
        MODEL_HUB_URL: hub.url,
        MODELS_DIR: modelsDir,
      }),
      readSection(coreSection),
      pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
      strictMock<ChunkIndexRepository>({ ensureVectorIndex: () => Promise.resolve() }),
    );

  it('tells a listener of the provider when it arrives, and one that comes later at once', async () => {
    const service = create();
    const early = jest.fn();
    service.onProvider(early);
    await service.onModuleInit();
    // /ready is open to anyone: the hub's address stays in the log.
    expect(service.status()).toMatchObject({
      mode: 'keyword_only',
      reason: 'the local model owner/model is being downloaded',
    });
    await until(() => service.current() !== null, 10_000);
    expect(early).toHaveBeenCalledTimes(1);
    expect(early).toHaveBeenCalledWith(service.current());

    const late = jest.fn();
    service.onProvider(late);
    expect(late).toHaveBeenCalledWith(service.current());
    expect(early).toHaveBeenCalledTimes(1);
    await service.beforeApplicationShutdown();
  });

  it('closes a model loaded while shutting down, and tells no listener', async () => {
    const service = create();
    const listener = jest.fn();
    service.onProvider(listener);
    let stopped: Promise<void> | undefined;
    load.mockImplementation(() => {
      // The shutdown begins while the model loads.
      stopped = service.beforeApplicationShutdown();
      return Promise.resolve(provider());
    });
    await service.onModuleInit();
    await until(() => stopped !== undefined, 10_000);
    await stopped;
    expect(close).toHaveBeenCalledTimes(1);
    expect(service.current()).toBeNull();
    expect(listener).not.toHaveBeenCalled();
  });

  it('clears the staging folder of a download killed over an hour ago, with the model in place', async () => {
    await mkdir(join(modelsDir, 'owner', 'model'), { recursive: true });
    const stale = join(modelsDir, '.download-killed');
    await mkdir(stale);
    const longAgo = new Date(Date.now() - 2 * 3600_000);
    await utimes(stale, longAgo, longAgo);
    const service = create();
    await service.onModuleInit();
    expect(await readdir(modelsDir)).toEqual(['owner']);
    expect(service.status().mode).toBe('hybrid');
    expect(hub.requests).toEqual([]);
  });

  it('says in /ready that the download failed, and in the log why, with the URL', async () => {
    hub.corrupt.add('tokenizer.json');
    const service = create();
    await service.onModuleInit();
    await until(() => lines.some((line) => line.msg.startsWith('NO EMBEDDING PROVIDER')), 10_000);
    const { reason } = service.status();
    expect(reason).toBe(
      'no OPENAI_API_KEY, and the local model owner/model could not be downloaded and loaded (see the log)',
    );
    expect(reason).not.toContain('127.0.0.1');
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: 'the local model could not be downloaded and loaded',
        err: expect.objectContaining({
          message: expect.stringContaining('tokenizer.json of owner/model does not match its checksum'),
        }),
      }),
    );
    expect(load).not.toHaveBeenCalled();
  });
});
