import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { env, ModelRegistry } from '@huggingface/transformers';
import { pino } from 'pino';
import {
  checkModelId,
  downloadModel,
  hasModel,
  MODEL_FILES,
  redirectTarget,
} from 'src/modules/embeddings/model-download.js';
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
  const download = (signal?: AbortSignal, idleTimeoutMs?: number) =>
    downloadModel({ hubUrl: hub.url, model: 'owner/model', modelsDir, logger, signal, idleTimeoutMs });

  beforeAll(async () => {
    hub = await startFakeHub(join(SYNTHETIC, MODEL), 'owner/model', MODEL_FILES);
  });
  afterAll(() => hub.close());
  beforeEach(async () => {
    modelsDir = await mkdtemp(join(tmpdir(), 'models-'));
    hub.corrupt.clear();
    hub.requests.length = 0;
    hub.acceptEncodings.length = 0;
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
    // Uncompressed, so that the bytes hashed are the file's.
    expect(hub.acceptEncodings).toHaveLength(hub.requests.length);
    expect(new Set(hub.acceptEncodings)).toEqual(new Set(['identity']));
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

  it('refuses a large file whose only checksum is the ETag of the storage it is redirected to', async () => {
    hub.checksumAt = 'storage';
    try {
      await expect(download()).rejects.toThrow(
        'onnx/model_quantized.onnx: the hub declares no checksum for it',
      );
    } finally {
      hub.checksumAt = 'hub';
    }
    expect(hub.requests).toContain('/storage/onnx/model_quantized.onnx');
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it('gives up on a file whose bytes stop arriving, leaving nothing behind', async () => {
    // A slice every 4 s: the small files arrive well within the 2 s allowed, the large one stalls.
    hub.largeFileMs = 80_000;
    try {
      await expect(download(undefined, 2_000)).rejects.toThrow(
        `${hub.url}/owner/model/resolve/main/onnx/model_quantized.onnx: nothing received for 2 s`,
      );
    } finally {
      hub.largeFileMs = 0;
    }
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it('removes the staging folders of downloads abandoned over an hour ago, and only those', async () => {
    const stale = join(modelsDir, '.download-stale');
    const fresh = join(modelsDir, '.download-fresh');
    for (const dir of [stale, fresh]) {
      await mkdir(join(dir, 'onnx'), { recursive: true });
      await writeFile(join(dir, 'onnx', 'model_quantized.onnx'), 'partial');
    }
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    for (const path of [join(stale, 'onnx', 'model_quantized.onnx'), join(stale, 'onnx'), stale]) {
      await utimes(path, twoHoursAgo, twoHoursAgo);
    }
    // Another process's download that still writes, in a folder made long ago.
    await utimes(fresh, twoHoursAgo, twoHoursAgo);
    await download();
    expect((await readdir(modelsDir)).sort()).toEqual(['.download-fresh', 'owner']);
    expect(lines.map((line) => line.msg)).toContain(
      'removed the staging folder of an abandoned model download',
    );
  });
});

describe('checkModelId', () => {
  it.each([['Xenova/bge-small-en-v1.5'], ['owner/model'], ['gpt2'], ['a_b/c-d.e']])('accepts %s', (id) => {
    expect(() => checkModelId(id)).not.toThrow();
  });

  it.each([
    ['..'],
    ['.'],
    ['owner/..'],
    ['../models'],
    ['owner/.'],
    ['.hidden/model'],
    ['owner/.git'],
    ['a/b/c'],
    ['owner/'],
    ['/abs'],
    [''],
  ])('refuses %j', (id) => {
    expect(() => checkModelId(id)).toThrow('is not a model id of the hub');
  });

  it('is checked before anything is written', async () => {
    const modelsDir = join(tmpdir(), `models-never-${process.pid}`);
    const logger = pino({ level: 'silent' });
    await expect(
      downloadModel({ hubUrl: 'http://127.0.0.1:9', model: 'owner/..', modelsDir, logger }),
    ).rejects.toThrow('is not a model id');
    expect(existsSync(modelsDir)).toBe(false);
  });
});

describe('redirectTarget', () => {
  it('follows a relative redirect, and HTTPS to HTTPS or HTTP to HTTPS elsewhere', () => {
    expect(redirectTarget('https://hub.example/a/resolve/main/x', '/b')).toBe('https://hub.example/b');
    expect(redirectTarget('https://hub.example/x', 'https://cdn.example/y')).toBe('https://cdn.example/y');
    expect(redirectTarget('http://127.0.0.1:1/x', 'https://cdn.example/y')).toBe('https://cdn.example/y');
  });

  it('refuses a redirect from HTTPS down to plain HTTP', () => {
    expect(() => redirectTarget('https://hub.example/x', 'http://cdn.example/y')).toThrow(
      'redirects from HTTPS to plain HTTP',
    );
  });

  it.each([['file:///etc/passwd'], ['ftp://cdn.example/y'], ['data:,hi']])(
    'refuses a redirect to %s',
    (to) => {
      expect(() => redirectTarget('https://hub.example/x', to)).toThrow('only http: and https: are followed');
    },
  );
});
