import { ndjsonLines, type NdjsonLine } from 'src/modules/documents/ndjson-lines.js';

async function* chunked(...chunks: string[]) {
  for (const chunk of chunks) {
    await Promise.resolve();
    yield Buffer.from(chunk);
  }
}

async function lines(source: AsyncIterable<Buffer>, max = 100) {
  const found: (string | { line: number; length: number })[] = [];
  for await (const line of ndjsonLines(source, max)) found.push(shown(line));
  return found;
}

const shown = (line: NdjsonLine) =>
  line.tooLong ? { line: line.line, length: line.length } : `${line.line}:${line.bytes.toString()}`;

describe('ndjsonLines', () => {
  it('numbers lines as they arrive, across chunks, blank lines and \\r\\n included', async () => {
    expect(await lines(chunked('{"a":1}\n{"b"', ':2}\r\n\n', '{"c":3}'))).toEqual([
      '1:{"a":1}',
      '2:{"b":2}',
      '3:',
      '4:{"c":3}',
    ]);
  });

  it('gives no line after a final newline, and none for an empty body', async () => {
    expect(await lines(chunked('x\n'))).toEqual(['1:x']);
    expect(await lines(chunked())).toEqual([]);
  });

  it('skips a line over the limit without holding it, and goes on with the next', async () => {
    const long = 'y'.repeat(30);
    expect(await lines(chunked('ok\n', long, long, '\nnext\n'), 50)).toEqual([
      '1:ok',
      { line: 2, length: 60 },
      '3:next',
    ]);
  });
});
