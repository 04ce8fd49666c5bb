import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { env, ModelRegistry } from '@huggingface/transformers';
import { pino } from 'pino';
import { downloadModel, hasModel, MODEL_FILES } from 'src/modules/embeddings/model-download.js';
import { type FakeHub, startFakeHub } from '../../../test/utils/fake-hub.js';

const SYNTHETIC = join(process.cwd(), '.cache', 'models');
const MODEL = 'synthetic/bert-L6-H384';
const CROSS_ENCODER = 'synthetic/ce-L6-H384';

describe('MODEL_FILES', () => {
  beforeAll(() => {
    env.localModelPath = SYNTHETIC;
    env.allowRemoteModels = false;
  });

  it('holds every file the q8 feature-extraction pipeline reads', async () => {
    const files = await ModelRegistry.get_pipeline_files('feature-extraction', MODEL, { dtype: 'q8' });
    expect([...MODEL_FILES].sort()).toEqual([...files].sort());
  });

  it('holds every file the q8 cross-encoder and its tokenizer read', async () => {
    const files = [
      ...(await ModelRegistry.get_model_files(CROSS_ENCODER, { dtype: 'q8' })),
      ...(await ModelRegistry.get_tokenizer_files(CROSS_ENCODER)),
    ];
    expect([...MODEL_FILES].sort()).toEqual([...files].sort());
  });
});

describe('downloadModel', () => {
  let hub: FakeHub;
  let modelsDir: string;
  const lines: { msg: string; file?: string; percent?: number }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const download = (signal?: AbortSignal) =>
    downloadModel({ hubUrl: hub.url, model: 'owner/model', modelsDir, logger, signal });

  beforeAll(async () => {
    hub = await startFakeHub(join(SYNTHETIC, MODEL), 'owner/model', MODEL_FILES);
  });
  afterAll(() => hub.close());
  beforeEach(async () => {
    modelsDir = await mkdtemp(join(tmpdir(), 'models-'));
    hub.corrupt.clear();
    hub.requests.length = 0;
    lines.length = 0;
  });
  afterEach(() => rm(modelsDir, { recursive: true, force: true }));

  it('puts every file in place, byte for byte, following the redirect of large files', async () => {
    await download();
    expect(hasModel(modelsDir, 'owner/model')).toBe(true);
    for (const file of MODEL_FILES) {
      expect(
        readFileSync(join(modelsDir, 'owner/model', file)).equals(readFileSync(join(SYNTHETIC, MODEL, file))),
      ).toBe(true);
    }
    expect(hub.requests).toContain('/storage/onnx/model_quantized.onnx');
    expect(await readdir(modelsDir)).toEqual(['owner']);
    const progress = lines.filter((line) => line.file === 'onnx/model_quantized.onnx');
    expect(progress.map((line) => line.percent)).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
  });

  it.each([['onnx/model_quantized.onnx'], ['tokenizer.json']])(
    'refuses %s when it does not match the checksum the hub declares, leaving nothing behind',
    async (file) => {
      hub.corrupt.add(file);
      await expect(download()).rejects.toThrow(`${file} of owner/model does not match its checksum`);
      expect(hasModel(modelsDir, 'owner/model')).toBe(false);
      expect(await readdir(modelsDir)).toEqual([]);
    },
  );

  it('stops when asked, leaving nothing behind', async () => {
    hub.largeFileMs = 2_000;
    try {
      const stop = new AbortController();
      const running = download(stop.signal);
      while (!hub.requests.includes('/storage/onnx/model_quantized.onnx')) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      stop.abort();
      await expect(running).rejects.toThrow();
      expect(await readdir(modelsDir)).toEqual([]);
    } finally {
      hub.largeFileMs = 0;
    }
  });

  it('refuses a file the hub declares no checksum for, and a hub that does not have the model', async () => {
    hub.checksums = false;
    try {
      await expect(download()).rejects.toThrow('the hub declares no checksum for it');
    } finally {
      hub.checksums = true;
    }
    expect(await readdir(modelsDir)).toEqual([]);
    await expect(downloadModel({ hubUrl: hub.url, model: 'owner/other', modelsDir, logger })).rejects.toThrow(
      'answered 404',
    );
    expect(await readdir(modelsDir)).toEqual([]);
  });
});
