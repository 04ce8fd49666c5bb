import { createReadStream, createWriteStream } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rename, rm, stat } from 'node:fs/promises';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { createGunzip } from 'node:zlib';
import { ImportError } from 'src/cli/documents-import.js';

/**
 * `datasets export` and `datasets import`: a dataset's archive (docs/export-format.md) downloaded to a
 * file or uploaded from one over HTTP, as any client of the API would, streamed both ways.
 */

export interface TransferOptions {
  url: string;
  apiKey: string;
}

/**
 * Downloads the archive into `out` (through a temporary file beside it, renamed once whole). The
 * stream is read back as it arrives, so that a cut one (the server failed mid-way) is an error here
 * rather than a file the import would refuse later.
 */
export async function exportDataset(
  options: TransferOptions & { datasetId: string; out: string },
): Promise<{ dataset_id: string; out: string; bytes: number; documents: number; chunks: number }> {
  const target = `${base(options.url)}/v1/datasets/${encodeURIComponent(options.datasetId)}/export`;
  const response = await request(target, { headers: { Authorization: `Bearer ${options.apiKey}` } });
  if (!response.ok || !response.body) throw await refusal(target, response);
  const partial = `${options.out}.partial`;
  const check = new PassThrough();
  const counted = lastRecord(check.pipe(createGunzip()));
  try {
    const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
    body.pipe(check);
    await pipeline(body, createWriteStream(partial));
    const end = await counted;
    await rename(partial, options.out);
    const { size } = await stat(options.out);
    return { dataset_id: options.datasetId, out: options.out, bytes: size, ...end };
  } catch (error) {
    check.destroy();
    await counted.catch(() => undefined);
    await rm(partial, { force: true });
    if (error instanceof ImportError) throw error;
    throw new ImportError(
      `the archive from ${target} is incomplete: ${(error as Error).message}`,
      'export_incomplete',
    );
  }
}

/** Uploads the archive in `path` to make a new dataset; answers the server's summary. */
export async function importDataset(
  options: TransferOptions & { path: string; name?: string },
): Promise<unknown> {
  const info = await stat(options.path).catch(() => null);
  if (!info?.isFile()) throw new ImportError(`${options.path} is not a file`, 'path_not_found');
  const query = options.name === undefined ? '' : `?name=${encodeURIComponent(options.name)}`;
  const target = `${base(options.url)}/v1/datasets/import${query}`;
  // node:http rather than fetch: the answer comes once the import has committed, which for a large
  // archive is longer than fetch waits for response headers (five minutes).
  const answer = await postFile(target, options.path, {
    Authorization: `Bearer ${options.apiKey}`,
    'Content-Type': 'application/gzip',
    'Content-Length': String(info.size),
  });
  if (answer.status !== 201) throw refusalOf(target, answer.status, answer.text);
  return JSON.parse(answer.text) as unknown;
}

/** POSTs a file as the body and reads the whole answer, however long the server takes to give it. */
function postFile(
  target: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; text: string }> {
  const url = new URL(target);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const sent = send(url, { method: 'POST', headers }, (response) => {
      const parts: Buffer[] = [];
      response.on('data', (part: Buffer) => parts.push(part));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }),
      );
      response.on('error', reject);
    });
    sent.on('error', (error) =>
      reject(new ImportError(`no answer from ${target}: ${error.message}`, 'server_unreachable')),
    );
    // A server that refuses early (a bad key) answers before the body is sent: its answer is kept.
    pipeline(createReadStream(path), sent).catch(() => undefined);
  });
}

function base(url: string): string {
  return url.replace(/\/+$/, '');
}

async function request(target: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(target, init);
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
    throw new ImportError(`no answer from ${target}: ${cause}`, 'server_unreachable');
  }
}

/** The server's error body as the command's error, its code kept. */
async function refusal(target: string, response: Response): Promise<ImportError> {
  return refusalOf(target, response.status, await response.text());
}

function refusalOf(target: string, status: number, text: string): ImportError {
  let body: { error?: string; code?: string } | null;
  try {
    body = JSON.parse(text) as { error?: string; code?: string };
  } catch {
    body = null;
  }
  return new ImportError(
    `${target} answered ${status}: ${body?.error ?? text.slice(0, 200)}`,
    body?.code ?? 'unexpected_answer',
  );
}

/** The counts of the archive's `end` record, which must be its last line. */
async function lastRecord(lines: AsyncIterable<Buffer>): Promise<{ documents: number; chunks: number }> {
  // Only the tail is kept: a line is at most a record, and the end record is small.
  let tail = '';
  for await (const chunk of lines) tail = (tail + chunk.toString('latin1')).slice(-64 * 1024);
  const last = tail.trimEnd().split('\n').at(-1) ?? '';
  type End = { type?: string; documents?: number; chunks?: number };
  let record: End | null;
  try {
    record = JSON.parse(last) as End;
  } catch {
    record = null;
  }
  if (record?.type !== 'end') throw new Error('it has no end record');
  return { documents: record.documents ?? 0, chunks: record.chunks ?? 0 };
}
