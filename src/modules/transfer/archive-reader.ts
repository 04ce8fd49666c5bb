import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { AppError } from 'src/common/errors/app-error.js';
import { deeperThan, MAX_BODY_DEPTH } from 'src/common/validation/json-body.js';
import { textIssueIn } from 'src/common/validation/json-value.js';
import { ndjsonLines } from 'src/modules/documents/ndjson-lines.js';
import {
  ARCHIVE_RECORD_BYTES,
  type ArchiveRecord,
  parseRecord,
} from 'src/modules/transfer/archive-format.js';
import { TransferErrors } from 'src/modules/transfer/transfer.errors.js';

/** A record with its place in the archive: its line in the decompressed NDJSON, from 1. */
export interface NumberedRecord {
  record: ArchiveRecord;
  line: number;
}

/**
 * An archive's records as its compressed bytes arrive: gunzipped as a stream, cut into lines of at
 * most `ARCHIVE_RECORD_BYTES` (a longer one is refused without being held), each parsed and checked
 * for text PostgreSQL cannot store. Holds one record at a time. A gzip stream that stops before its
 * end is `archive_truncated`; one that is not gzip, or is damaged, `archive_corrupt`.
 */
export async function* archiveRecords(compressed: AsyncIterable<Buffer>): AsyncGenerator<NumberedRecord> {
  const gunzip = createGunzip();
  const source = Readable.from(compressed);
  // The body's own failure (a client gone mid-way) ends the reading with its error.
  source.on('error', (error) => gunzip.destroy(error));
  source.pipe(gunzip);
  try {
    for await (const line of ndjsonLines(gunzip, ARCHIVE_RECORD_BYTES)) {
      if (line.tooLong) {
        throw TransferErrors.corrupt(`a record is over ${ARCHIVE_RECORD_BYTES} bytes`, { record: line.line });
      }
      if (line.bytes.length === 0) continue;
      const record = parseRecord(line.bytes, line.line);
      checkText(record, line.line);
      yield { record, line: line.line };
    }
  } catch (error) {
    throw asArchiveError(error);
  } finally {
    source.destroy();
    gunzip.destroy();
  }
}

function checkText(record: ArchiveRecord, line: number): void {
  if (deeperThan(record, MAX_BODY_DEPTH)) {
    throw TransferErrors.corrupt(`a record nests more than ${MAX_BODY_DEPTH} levels deep`, { record: line });
  }
  const issue = textIssueIn(record);
  if (issue)
    throw TransferErrors.corrupt(`${issue.field} ${issue.issue}`, { record: line, field: issue.field });
}

/** zlib's refusals as the archive's: the end of input reached early, or bytes that are not gzip. */
function asArchiveError(error: unknown): unknown {
  if (error instanceof AppError) return error;
  const code = (error as { code?: unknown }).code;
  if (code === 'Z_BUF_ERROR') return TransferErrors.truncated('the gzip stream stops before its end');
  if (typeof code === 'string' && code.startsWith('Z_')) {
    return TransferErrors.corrupt(`not a readable gzip stream (${(error as Error).message})`);
  }
  return error;
}
