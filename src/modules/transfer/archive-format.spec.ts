import { AppError } from 'src/common/errors/app-error.js';
import { decodeVector, encodeVector, parseRecord } from 'src/modules/transfer/archive-format.js';
import { outsideArchive } from 'src/modules/transfer/import-writer.js';

const line = (value: unknown) => Buffer.from(JSON.stringify(value));

function refusal(run: () => unknown): { code: string; details: unknown } {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return { code: error.code, details: error.details };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('archive records', () => {
  it('gives vectors back exactly as float32 values', () => {
    const values = [0.1, -0.25, 1 / 3, 3.4e38];
    const decoded = decodeVector(encodeVector(values), 4, { record: 5 });
    expect(decoded).toEqual(values.map((value) => Math.fround(value)));
  });

  it('refuses a vector of another dimension, or one that is not finite', () => {
    expect(refusal(() => decodeVector(encodeVector([1, 2, 3]), 4, { record: 5 }))).toMatchObject({
      code: 'archive_invalid_vector',
      details: { record: 5 },
    });
    expect(refusal(() => decodeVector(encodeVector([1, Number.POSITIVE_INFINITY]), 2, {})).code).toBe(
      'archive_invalid_vector',
    );
    expect(refusal(() => decodeVector('not base64!', 2, {})).code).toBe('archive_corrupt');
  });

  it('refuses another format version by its own code', () => {
    const manifest = { type: 'manifest', format: 'dss-dataset-archive', version: 2 };
    expect(refusal(() => parseRecord(line(manifest), 1))).toMatchObject({
      code: 'archive_version_unsupported',
      details: { version: 2, supported: [1] },
    });
  });

  it('names the field a record lacks or mistypes', () => {
    const chunk = { type: 'chunk', document_id: 'doc_a', ordinal: -1 };
    expect(refusal(() => parseRecord(line(chunk), 9))).toMatchObject({
      code: 'archive_corrupt',
      details: { record: 9, field: 'content' },
    });
    expect(refusal(() => parseRecord(Buffer.from('{"type":'), 3)).code).toBe('archive_corrupt');
    expect(refusal(() => parseRecord(line({ type: 'tarball' }), 3)).code).toBe('archive_corrupt');
    expect(refusal(() => parseRecord(Buffer.from([0x7b, 0xff, 0x7d]), 3)).code).toBe('archive_corrupt');
  });

  it('reads an end record', () => {
    expect(parseRecord(line({ type: 'end', documents: 2, chunks: 7 }), 12)).toEqual({
      type: 'end',
      documents: 2,
      chunks: 7,
    });
  });

  it('tells names that leave their folder', () => {
    for (const name of ['../x.md', 'a/../../x.md', '/etc/passwd', '\\\\server\\share', 'C:x.txt', 'a\\..\\b'])
      expect([name, outsideArchive(name)]).toEqual([name, true]);
    for (const name of ['guide.md', 'docs/guide.md', '..hidden.md', 'v1..2.txt'])
      expect([name, outsideArchive(name)]).toEqual([name, false]);
  });
});
