import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * `documents import`: a folder's files, or a JSONL file's lines, sent to the bulk upload route over
 * HTTP, as any client of the API would (no database access). Requests hold at most 100 documents and
 * 16 MiB, one group of the server's, so that each is written all or nothing, and each carries an
 * Idempotency-Key derived from its content: a request retried, or a re-run within the keys' 24 hours,
 * is answered as first and creates nothing twice.
 */

export interface ImportOptions {
  datasetId: string;
  path: string;
  url: string;
  apiKey: string;
  /** Progress for whoever watches: a bar on a terminal, a line per request otherwise. */
  progress: (sent: number, total: number, created: number, failed: number) => void;
}

export interface ImportSummary {
  dataset_id: string;
  created: number;
  /** Of `created`, those an earlier run created: their request was answered again (Idempotency-Key). */
  replayed: number;
  failed: number;
  failures: { source: string; status: number; error: { error: string; code: string; details?: unknown } }[];
}

/** A request-level failure: the import stops (bad key, unknown dataset, server unreachable). */
export class ImportError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

const REQUEST_DOCUMENTS = 100;
const REQUEST_BYTES = 16 * 1024 * 1024;
/** A single upload's limit: a larger file is reported without being read. */
const FILE_BYTES = 10 * 1024 * 1024;
const ATTEMPTS = 4;

/** One document to send: its NDJSON line, and what names it in the summary. */
interface Item {
  source: string;
  line: string;
}

interface BulkAnswer {
  replayed: boolean;
  results: { line: number; status: number; error?: ImportSummary['failures'][number]['error'] }[];
}

export async function importDocuments(options: ImportOptions): Promise<ImportSummary> {
  const info = await stat(options.path).catch(() => null);
  if (!info) throw new ImportError(`${options.path} does not exist`, 'path_not_found');
  const summary: ImportSummary = {
    dataset_id: options.datasetId,
    created: 0,
    replayed: 0,
    failed: 0,
    failures: [],
  };
  const fail = (source: string, status: number, error: ImportSummary['failures'][number]['error']) => {
    summary.failed += 1;
    summary.failures.push({ source, status, error });
  };
  let total: number;
  /** Files refused before sending (over 10 MB), counted as done in the progress. */
  let skipped = 0;
  let items: AsyncIterable<Item>;
  if (info.isDirectory()) {
    const files = await listFiles(options.path);
    total = files.length;
    items = fileItems(options.path, files, (source, status, error) => {
      skipped += 1;
      fail(source, status, error);
    });
  } else {
    total = await countLines(options.path);
    items = jsonlItems(options.path);
  }
  let sent = 0;
  for await (const batch of batches(items)) {
    const answer = await send(options, batch);
    for (const result of answer.results) {
      const item = batch[result.line - 1];
      if (result.error) fail(item.source, result.status, result.error);
      else {
        summary.created += 1;
        if (answer.replayed) summary.replayed += 1;
      }
    }
    sent += batch.length;
    options.progress(sent + skipped, total, summary.created, summary.failed);
  }
  if (sent === 0) options.progress(skipped, total, summary.created, summary.failed);
  return summary;
}

/** Every file under `root`, recursively, in name order; hidden files and folders (`.git`) are left out. */
async function listFiles(root: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string) => {
    const entries = await readdir(dir, { withFileTypes: true });
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) found.push(path);
    }
  };
  await walk(root);
  return found;
}

/** Files as the route's file lines, named by their path in the folder. */
async function* fileItems(
  root: string,
  files: string[],
  fail: (source: string, status: number, error: ImportSummary['failures'][number]['error']) => void,
): AsyncGenerator<Item> {
  for (const path of files) {
    const filename = relative(root, path).split(sep).join('/');
    const { size } = await stat(path);
    if (size > FILE_BYTES) {
      fail(filename, 413, {
        error: `Files may be at most ${FILE_BYTES} bytes (10 MB)`,
        code: 'file_too_large',
        details: { limit_bytes: FILE_BYTES },
      });
      continue;
    }
    const content = await readFile(path);
    yield {
      source: filename,
      line: JSON.stringify({ filename, content_base64: content.toString('base64') }),
    };
  }
}

async function* jsonlItems(path: string): AsyncGenerator<Item> {
  let number = 0;
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
    number += 1;
    if (line.trim() !== '') yield { source: `line ${number}`, line };
  }
}

async function countLines(path: string): Promise<number> {
  let count = 0;
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Infinity })) {
    if (line.trim() !== '') count += 1;
  }
  return count;
}

/** Items in requests of at most 100 documents and 16 MiB (a larger line goes alone). */
async function* batches(items: AsyncIterable<Item>): AsyncGenerator<Item[]> {
  let batch: Item[] = [];
  let bytes = 0;
  for await (const item of items) {
    const size = Buffer.byteLength(item.line) + 1;
    if (batch.length > 0 && (batch.length >= REQUEST_DOCUMENTS || bytes + size > REQUEST_BYTES)) {
      yield batch;
      batch = [];
      bytes = 0;
    }
    batch.push(item);
    bytes += size;
  }
  if (batch.length > 0) yield batch;
}

/**
 * Sends one request, retrying what a retry can fix (no answer, 5xx, a request with the same key still
 * running) with the same key, which makes the retry safe.
 */
async function send(options: ImportOptions, batch: Item[]): Promise<BulkAnswer> {
  const body = Buffer.from(batch.map((item) => `${item.line}\n`).join(''));
  const key = `import-${createHash('sha256').update(`${options.datasetId}\n`).update(body).digest('hex')}`;
  const target = `${options.url.replace(/\/+$/, '')}/v1/datasets/${encodeURIComponent(options.datasetId)}/documents/bulk`;
  for (let attempt = 1; ; attempt += 1) {
    let response: Response;
    try {
      response = await fetch(target, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${options.apiKey}`,
          'Content-Type': 'application/x-ndjson',
          'Idempotency-Key': key,
        },
        body,
      });
    } catch (error) {
      if (attempt < ATTEMPTS) {
        await sleep(500 * 2 ** attempt);
        continue;
      }
      const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
      throw new ImportError(`no answer from ${options.url}: ${cause}`, 'server_unreachable');
    }
    const text = await response.text();
    const answer = parse(text);
    if (response.ok && answer && Array.isArray((answer as BulkAnswer).results)) {
      return { ...(answer as BulkAnswer), replayed: response.headers.get('idempotent-replayed') === 'true' };
    }
    const code = (answer as { code?: string } | null)?.code ?? 'unexpected_answer';
    const retriable = response.status >= 500 || code === 'idempotency_key_in_progress';
    if (retriable && attempt < ATTEMPTS) {
      await sleep(500 * 2 ** attempt);
      continue;
    }
    const message = (answer as { error?: string } | null)?.error ?? `HTTP ${response.status}`;
    throw new ImportError(`${target} answered ${response.status}: ${message}`, code);
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A progress bar on a terminal; a line per request when stderr is a file or a pipe. */
export function progressReporter(stream: NodeJS.WriteStream): ImportOptions['progress'] {
  const width = 30;
  return (sent, total, created, failed) => {
    if (!stream.isTTY) {
      stream.write(`sent ${sent}/${total} documents: ${created} created, ${failed} failed\n`);
      return;
    }
    const filled = total === 0 ? width : Math.round((Math.min(sent, total) / total) * width);
    stream.write(
      `\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${sent}/${total} (${created} created, ${failed} failed)`,
    );
    if (sent >= total) stream.write('\n');
  };
}
