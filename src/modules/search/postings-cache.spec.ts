import {
  POSTING_BYTES,
  type Postings,
  PostingsCache,
  unpackPostings,
} from 'src/modules/search/postings-cache.js';

function postings(count: number): Postings {
  return {
    chunks: Float64Array.from({ length: count }, (_, i) => i + 1),
    tf: new Uint32Array(count).fill(1),
    length: new Uint32Array(count).fill(5),
  };
}

describe('PostingsCache', () => {
  it('returns postings only for the version they were read at', () => {
    const cache = new PostingsCache(100);
    const held = postings(3);
    cache.set('1', 'cell', '41', held);
    expect(cache.get('1', 'cell', '41')).toBe(held);
    expect(cache.get('2', 'cell', '41')).toBeUndefined();
    expect(cache.get('1', 'cell', '42')).toBeUndefined();
    // A stale entry is dropped once seen, and its postings no longer count.
    expect(cache.get('1', 'cell', '41')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('evicts the least recently used terms to stay within its budget of postings', () => {
    const cache = new PostingsCache(10);
    cache.set('1', 'a', '1', postings(4));
    cache.set('1', 'b', '1', postings(4));
    cache.get('1', 'a', '1'); // a is now the most recently used
    cache.set('1', 'c', '1', postings(4));
    expect(cache.get('1', 'b', '1')).toBeUndefined();
    expect(cache.get('1', 'a', '1')).toBeDefined();
    expect(cache.get('1', 'c', '1')).toBeDefined();
    expect(cache.size).toBe(8);
  });

  it('does not keep a term larger than the whole budget, nor anything with a budget of 0', () => {
    const cache = new PostingsCache(10);
    cache.set('1', 'a', '1', postings(4));
    cache.set('1', 'huge', '1', postings(11));
    expect(cache.get('1', 'huge', '1')).toBeUndefined();
    expect(cache.get('1', 'a', '1')).toBeDefined();
    const none = new PostingsCache(0);
    none.set('1', 'a', '1', postings(1));
    expect(none.size).toBe(0);
  });

  it('replaces a term read again at a newer version', () => {
    const cache = new PostingsCache(10);
    cache.set('1', 'a', '1', postings(4));
    const newer = postings(2);
    cache.set('1', 'a', '2', newer);
    expect(cache.size).toBe(2);
    expect(cache.get('1', 'a', '2')).toBe(newer);
  });

  it('keeps the newer version when a query of an older snapshot reads a term', () => {
    const cache = new PostingsCache(10);
    const newer = postings(2);
    cache.set('1', 'a', '9', newer);
    expect(cache.get('1', 'a', '8')).toBeUndefined();
    cache.set('1', 'a', '8', postings(4));
    expect(cache.get('1', 'a', '9')).toBe(newer);
    expect(cache.size).toBe(2);
  });
});

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
