import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import { isStaticModelDir, STATIC_MODEL_FILES } from 'src/modules/embeddings/static-model.js';

/**
 * The files @huggingface/transformers reads for a BERT-style model at `dtype: 'q8'`, for the
 * feature-extraction pipeline and for a cross-encoder alike (`ModelRegistry.get_pipeline_files`;
 * model-download.spec.ts checks the two agree). A static model's are `STATIC_MODEL_FILES`.
 */
export const MODEL_FILES = [
  'config.json',
  'tokenizer.json',
  'tokenizer_config.json',
  'onnx/model_quantized.onnx',
];

/** A file whose bytes stop arriving for this long is abandoned, and the download with it. */
export const DOWNLOAD_IDLE_TIMEOUT_MS = 60_000;

/** A staging folder untouched for this long belongs to a download that died (a killed process). */
const STALE_STAGING_MS = 60 * 60 * 1000;
const STAGING_PREFIX = '.download-';

export interface ModelDownloadOptions {
  /** The hub, laid out as Hugging Face's: `<hub>/<model>/resolve/<revision>/<file>`. */
  hubUrl: string;
  model: string;
  modelsDir: string;
  logger: Logger;
  signal?: AbortSignal;
  revision?: string;
  /** `DOWNLOAD_IDLE_TIMEOUT_MS` unless given. */
  idleTimeoutMs?: number;
}

/** A model is there once its folder is: a download puts the folder in place whole, at its end. */
export function hasModel(modelsDir: string, model: string): boolean {
  return existsSync(join(modelsDir, model));
}

/**
 * Throws unless `model` is a hub id (`name` or `owner/name`) that names a folder inside MODELS_DIR:
 * no segment may start with a dot, which also rules out `.` and `..`.
 */
export function checkModelId(model: string): void {
  const segments = model.split('/');
  if (!/^[\w.-]+(\/[\w.-]+)?$/.test(model) || segments.some((segment) => segment.startsWith('.'))) {
    throw new Error(`"${model}" is not a model id of the hub (owner/name)`);
  }
}

/**
 * Fetches a model's files into `<modelsDir>/<model>/`. Each file is checked against the checksum the
 * hub declares for it; they are written into a folder of their own beside the models, which is
 * renamed into place once every file matched, so that a model is never loaded half written. On any
 * failure that folder is removed, and nothing is left in `modelsDir`.
 */
export async function downloadModel(options: ModelDownloadOptions): Promise<void> {
  const { model, modelsDir, logger } = options;
  checkModelId(model);
  await mkdir(modelsDir, { recursive: true });
  await removeStaleStaging(modelsDir, logger);
  const staging = await mkdtemp(join(modelsDir, STAGING_PREFIX));
  try {
    // The config says which kind of model it is, and so which files make it.
    await downloadFile(options, 'config.json', join(staging, 'config.json'));
    const files = (isStaticModelDir(staging) ? STATIC_MODEL_FILES : MODEL_FILES).filter(
      (file) => file !== 'config.json',
    );
    logger.info({ model, hub: options.hubUrl, files }, 'downloading the embedding model');
    for (const file of files) await downloadFile(options, file, join(staging, file));
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

/**
 * Removes the staging folders of downloads that died without cleaning up (a process killed mid-way).
 * A folder counts as stale when neither it nor anything in it changed for `STALE_STAGING_MS`, so that
 * a slow download of another process sharing MODELS_DIR is left alone.
 */
export async function removeStaleStaging(modelsDir: string, logger: Logger, now = Date.now()): Promise<void> {
  const entries = await readdir(modelsDir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isDirectory() || !entry.name.startsWith(STAGING_PREFIX)) continue;
    const path = join(modelsDir, entry.name);
    try {
      if (now - (await lastChange(path)) < STALE_STAGING_MS) continue;
      await rm(path, { recursive: true, force: true });
      logger.info({ dir: path }, 'removed the staging folder of an abandoned model download');
    } catch (error) {
      logger.warn({ err: error, dir: path }, 'could not remove an abandoned model download');
    }
  }
}

async function lastChange(dir: string): Promise<number> {
  let latest = (await stat(dir)).mtimeMs;
  for (const name of await readdir(dir, { recursive: true })) {
    latest = Math.max(latest, (await stat(join(dir, name))).mtimeMs);
  }
  return latest;
}

async function downloadFile(options: ModelDownloadOptions, file: string, path: string): Promise<void> {
  const { hubUrl, model, revision = 'main', logger } = options;
  const url = `${hubUrl}/${model}/resolve/${encodeURIComponent(revision)}/${file}`;
  const idle = idleTimeout(options.idleTimeoutMs ?? DOWNLOAD_IDLE_TIMEOUT_MS, url);
  const signal = options.signal ? AbortSignal.any([options.signal, idle.signal]) : idle.signal;
  try {
    const { response, declared } = await fetchFile(url, hubUrl, signal);
    if (!declared) {
      await response.body?.cancel();
      throw new Error(`${url}: the hub declares no checksum for it (an ETag of its sha256 or git hash)`);
    }
    const total = Number(response.headers.get('content-length')) || null;
    await mkdir(dirname(path), { recursive: true });
    await pipeline(
      Readable.fromWeb(response.body!),
      progress(
        (received) => {
          const percent = total ? Math.round((100 * received) / total) : undefined;
          logger.info({ model, file, received, total, percent }, 'downloading the embedding model');
        },
        total,
        idle.touch,
      ),
      createWriteStream(path),
      { signal },
    );
    idle.stop();
    const actual = await digest(path, declared.kind);
    if (actual !== declared.hash) {
      throw new Error(
        `${file} of ${model} does not match its checksum: ${declared.kind} ${actual}, the hub declares ${declared.hash}`,
      );
    }
  } catch (error) {
    // The stream's own error only says "aborted"; the timeout says which file stalled.
    if (idle.signal.aborted && !options.signal?.aborted) throw idle.signal.reason;
    throw error;
  } finally {
    idle.stop();
  }
}

/** An AbortSignal that fires once `touch` has not been called for `ms`. */
function idleTimeout(ms: number, url: string) {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new Error(`${url}: nothing received for ${ms / 1000} s`)),
    ms,
  );
  return { signal: controller.signal, touch: () => timer.refresh(), stop: () => clearTimeout(timer) };
}

interface Declared {
  kind: 'sha256' | 'git-sha1';
  hash: string;
}

/**
 * Follows redirects itself, to read the checksum where the hub puts it: Hugging Face redirects a
 * large (LFS) file to its storage with the file's sha256 in `X-Linked-Etag`, and answers a small
 * one with its git blob hash as its `ETag`. Only the hub's own answers declare a checksum: the
 * storage a file is redirected to is another party, whose ETag may mean anything.
 */
async function fetchFile(
  url: string,
  hubUrl: string,
  signal: AbortSignal,
): Promise<{ response: Response; declared: Declared | null }> {
  const hubOrigin = new URL(hubUrl).origin;
  let declared: Declared | null = null;
  for (let hops = 0; hops <= 5; hops++) {
    // Identity: the checksum is of the file's bytes, not of a compressed form of them.
    const response = await fetch(url, {
      redirect: 'manual',
      signal,
      headers: { 'Accept-Encoding': 'identity' },
    });
    const fromHub = new URL(url).origin === hubOrigin;
    if (fromHub) declared ??= checksumOf(response.headers.get('x-linked-etag'));
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      await response.body?.cancel();
      url = redirectTarget(url, location);
      continue;
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      throw new Error(`${url} answered ${response.status}`);
    }
    return { response, declared: declared ?? (fromHub ? checksumOf(response.headers.get('etag')) : null) };
  }
  throw new Error(`${url}: too many redirects`);
}

/** Where a redirect leads: over HTTP(S) only, and never from HTTPS down to plain HTTP. */
export function redirectTarget(from: string, location: string): string {
  const target = new URL(location, from);
  if (target.protocol !== 'https:' && target.protocol !== 'http:') {
    throw new Error(`${from} redirects to ${target.protocol} (only http: and https: are followed)`);
  }
  if (new URL(from).protocol === 'https:' && target.protocol === 'http:') {
    throw new Error(`${from} redirects from HTTPS to plain HTTP (${target.href}): refused`);
  }
  return target.href;
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

/**
 * Passes bytes through, reporting every tenth of the file (every 10 MB when its size is unknown), and
 * calling `touch` on every chunk (the idle timeout).
 */
function progress(report: (received: number) => void, total: number | null, touch: () => void): Transform {
  const step = total ? Math.max(1, Math.ceil(total / 10)) : 10 * 1024 * 1024;
  let received = 0;
  let next = step;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      touch();
      received += chunk.length;
      if (received >= next || received === total) {
        report(received);
        next = (Math.floor(received / step) + 1) * step;
      }
      done(null, chunk);
    },
  });
}
