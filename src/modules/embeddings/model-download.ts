import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';

/**
 * The files @huggingface/transformers reads for a BERT-style model at `dtype: 'q8'`, for the
 * feature-extraction pipeline and for a cross-encoder alike (`ModelRegistry.get_pipeline_files`;
 * model-download.spec.ts checks the two agree).
 */
export const MODEL_FILES = [
  'config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'onnx/model_quantized.onnx',
];

export interface ModelDownloadOptions {
  /** The hub, laid out as Hugging Face's: `<hub>/<model>/resolve/<revision>/<file>`. */
  hubUrl: string;
  model: string;
  modelsDir: string;
  logger: Logger;
  signal?: AbortSignal;
  revision?: string;
}

/** A model is there once its folder is: a download puts the folder in place whole, at its end. */
export function hasModel(modelsDir: string, model: string): boolean {
  return existsSync(join(modelsDir, model));
}

/**
 * Fetches a model's files into `<modelsDir>/<model>/`. Each file is checked against the checksum the
 * hub declares for it; they are written into a folder of their own beside the models, which is
 * renamed into place once every file matched, so that a model is never loaded half written. On any
 * failure that folder is removed, and nothing is left in `modelsDir`.
 */
export async function downloadModel(options: ModelDownloadOptions): Promise<void> {
  const { model, modelsDir, logger } = options;
  if (!/^[\w.-]+(\/[\w.-]+)?$/.test(model) || model.split('/').includes('..')) {
    throw new Error(`"${model}" is not a model id of the hub (owner/name)`);
  }
  await mkdir(modelsDir, { recursive: true });
  const staging = await mkdtemp(join(modelsDir, '.download-'));
  try {
    logger.info({ model, hub: options.hubUrl, files: MODEL_FILES }, 'downloading the embedding model');
    for (const file of MODEL_FILES) await downloadFile(options, file, join(staging, file));
    await mkdir(dirname(join(modelsDir, model)), { recursive: true });
    await rename(staging, join(modelsDir, model)).catch((error: unknown) => {
      // Another process sharing MODELS_DIR put the model in place first.
      if (!hasModel(modelsDir, model)) throw error;
    });
    logger.info({ model, dir: join(modelsDir, model) }, 'embedding model downloaded');
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

async function downloadFile(options: ModelDownloadOptions, file: string, path: string): Promise<void> {
  const { hubUrl, model, revision = 'main', signal, logger } = options;
  const url = `${hubUrl}/${model}/resolve/${encodeURIComponent(revision)}/${file}`;
  const { response, declared } = await fetchFile(url, signal);
  if (!declared) {
    await response.body?.cancel();
    throw new Error(`${url}: the hub declares no checksum for it (an ETag of its sha256 or git hash)`);
  }
  const total = Number(response.headers.get('content-length')) || null;
  await mkdir(dirname(path), { recursive: true });
  await pipeline(
    Readable.fromWeb(response.body!),
    progress((received) => {
      const percent = total ? Math.round((100 * received) / total) : undefined;
      logger.info({ model, file, received, total, percent }, 'downloading the embedding model');
    }, total),
    createWriteStream(path),
    { signal },
  );
  const actual = await digest(path, declared.kind);
  if (actual !== declared.hash) {
    throw new Error(
      `${file} of ${model} does not match its checksum: ${declared.kind} ${actual}, the hub declares ${declared.hash}`,
    );
  }
}

interface Declared {
  kind: 'sha256' | 'git-sha1';
  hash: string;
}

/**
 * Follows redirects itself, to read the checksum where the hub puts it: Hugging Face redirects a
 * large (LFS) file to its storage with the file's sha256 in `X-Linked-Etag`, and answers a small
 * one with its git blob hash as its `ETag`.
 */
async function fetchFile(
  url: string,
  signal?: AbortSignal,
): Promise<{ response: Response; declared: Declared | null }> {
  let declared: Declared | null = null;
  for (let hops = 0; hops <= 5; hops++) {
    const response = await fetch(url, { redirect: 'manual', signal });
    declared ??= checksumOf(response.headers.get('x-linked-etag'));
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel();
      url = new URL(location, url).href;
      continue;
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      throw new Error(`${url} answered ${response.status}`);
    }
    return { response, declared: declared ?? checksumOf(response.headers.get('etag')) };
  }
  throw new Error(`${url}: too many redirects`);
}

/** An ETag that is a content hash: 64 hex digits are a sha256, 40 a git blob hash (sha1). */
function checksumOf(etag: string | null): Declared | null {
  const hash = etag?.replace(/^W\//, '').replace(/"/g, '').toLowerCase() ?? '';
  if (/^[0-9a-f]{64}$/.test(hash)) return { kind: 'sha256', hash };
  if (/^[0-9a-f]{40}$/.test(hash)) return { kind: 'git-sha1', hash };
  return null;
}

/** A file's sha256, or its git blob hash: the sha1 of `blob <size>\0` and the content. */
async function digest(path: string, kind: Declared['kind']): Promise<string> {
  const hash = createHash(kind === 'sha256' ? 'sha256' : 'sha1');
  if (kind === 'git-sha1') hash.update(`blob ${(await stat(path)).size}\0`);
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Passes bytes through, reporting every tenth of the file (every 10 MB when its size is unknown). */
function progress(report: (received: number) => void, total: number | null): Transform {
  const step = total ? Math.max(1, Math.ceil(total / 10)) : 10 * 1024 * 1024;
  let received = 0;
  let next = step;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      received += chunk.length;
      if (received >= next || received === total) {
        report(received);
        next = (Math.floor(received / step) + 1) * step;
      }
      done(null, chunk);
    },
  });
}
