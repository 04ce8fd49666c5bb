/** One line of an NDJSON body: its bytes, or only how long it was when it is over the limit. */
export type NdjsonLine =
  { line: number; bytes: Buffer; tooLong?: undefined } | { line: number; tooLong: true; length: number };

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * Splits a byte stream into its lines (numbered from 1, blank ones included, `\r\n` as `\n`) as the
 * chunks arrive, holding at most one line of `maxLineBytes`: a longer line is counted and skipped,
 * never held whole.
 */
export async function* ndjsonLines(
  chunks: AsyncIterable<Buffer>,
  maxLineBytes: number,
): AsyncGenerator<NdjsonLine> {
  let line = 1;
  let parts: Buffer[] = [];
  let length = 0;
  const finish = (): NdjsonLine => {
    const done: NdjsonLine =
      length > maxLineBytes ? { line, tooLong: true, length } : { line, bytes: withoutReturn(parts) };
    line += 1;
    parts = [];
    length = 0;
    return done;
  };
  for await (const chunk of chunks) {
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(NEWLINE, start);
      const segment = chunk.subarray(start, newline === -1 ? chunk.length : newline);
      length += segment.length;
      if (length > maxLineBytes) parts = [];
      else if (segment.length > 0) parts.push(segment);
      if (newline === -1) break;
      yield finish();
      start = newline + 1;
    }
  }
  if (length > 0) yield finish();
}

function withoutReturn(parts: Buffer[]): Buffer {
  const bytes = parts.length === 1 ? parts[0] : Buffer.concat(parts);
  return bytes.at(-1) === CARRIAGE_RETURN ? bytes.subarray(0, -1) : bytes;
}
