import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CommonErrors } from 'src/common/errors/app-error.js';
import type { StreamedBody } from 'src/common/http/streamed-body.js';

/** A request body written to a temporary file as fast as it arrives, to be read back at the reader's pace. */
export interface SpooledBody {
  read(): AsyncIterable<Buffer>;
  remove(): Promise<void>;
}

/**
 * Writes the body to a file of its own under the system's temporary folder, within `maxBytes`. An
 * import writes for longer than a client takes to send (HTTP_REQUEST_TIMEOUT_MS bounds the sending):
 * read straight into the transaction, a large archive's body would be held back past that bound.
 */
export async function spool(body: StreamedBody, maxBytes: number): Promise<SpooledBody> {
  const folder = await mkdtemp(join(tmpdir(), 'dss-import-'));
  const remove = () => rm(folder, { recursive: true, force: true });
  const file = join(folder, 'archive');
  try {
    await pipeline(Readable.from(body.chunks()), createWriteStream(file));
    if (body.exceeded) throw CommonErrors.payloadTooLarge(maxBytes);
  } catch (error) {
    await remove();
    throw error;
  }
  return { read: () => createReadStream(file), remove };
}
