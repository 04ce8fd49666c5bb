import { POSTING_BYTES, unpackPostings } from 'src/modules/chunk-index/postings.repository.js';

describe('unpackPostings', () => {
  it('reads the database’s packed form (int8 chunk, int4 tf, int4 length, big-endian)', () => {
    const rows: [bigint, number, number][] = [
      [2n ** 40n + 7n, 3, 120],
      [42n, 1, 9],
      [43n, 2, 30],
    ];
    const packed = Buffer.alloc(rows.length * POSTING_BYTES);
    rows.forEach(([chunk, tf, length], i) => {
      packed.writeBigInt64BE(chunk, i * POSTING_BYTES);
      packed.writeUInt32BE(tf, i * POSTING_BYTES + 8);
      packed.writeUInt32BE(length, i * POSTING_BYTES + 12);
    });
    const unpacked = unpackPostings(packed);
    expect([...unpacked.chunks]).toEqual([2 ** 40 + 7, 42, 43]);
    expect([...unpacked.tf]).toEqual([3, 1, 2]);
    expect([...unpacked.length]).toEqual([120, 9, 30]);
  });
});
