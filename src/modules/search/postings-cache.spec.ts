import type { Postings } from 'src/modules/chunk-index/postings.repository.js';
import { PostingsCache } from 'src/modules/search/postings-cache.js';

function postings(count: number): Postings {
  return {
    chunks: Float64Array.from({ length: count }, (_, i) => i + 1),
    tf: new Uint32Array(count).fill(1),
    length: new Uint32Array(count).fill(5),
  };
}

describe('PostingsCache', () => {
  it('returns postings only for the version they were read at', () => {
    const cache = new PostingsCache(5);
    const held = postings(3);
    cache.set('1', 'cell', '41', held);
    expect(cache.get('1', 'cell', '41')).toBe(held);
    expect(cache.get('2', 'cell', '41')).toBeUndefined();
    const other = postings(1);
    cache.set('1', 'other', '1', other);
    cache.get('1', 'other', '1');
    // A miss leaves the entry where it was in the order of use: a stale one ages out first.
    expect(cache.get('1', 'cell', '42')).toBeUndefined();
    cache.set('1', 'third', '1', postings(2));
    expect(cache.get('1', 'cell', '41')).toBeUndefined();
    expect(cache.get('1', 'other', '1')).toBe(other);
    expect(cache.size).toBe(3);
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

  it('replaces a term read again at another version', () => {
    const cache = new PostingsCache(10);
    cache.set('1', 'a', '1', postings(4));
    const newer = postings(2);
    cache.set('1', 'a', '2', newer);
    expect(cache.size).toBe(2);
    expect(cache.get('1', 'a', '2')).toBe(newer);
  });

  it('compares versions for equality only: a lower one read last replaces a higher one', () => {
    // Versions drawn before their statement (Citus) need not rise in the order writers commit.
    const cache = new PostingsCache(10);
    const first = postings(2);
    cache.set('1', 'a', '9', first);
    expect(cache.get('1', 'a', '8')).toBeUndefined();
    expect(cache.get('1', 'a', '9')).toBe(first);
    const last = postings(4);
    cache.set('1', 'a', '8', last);
    expect(cache.get('1', 'a', '9')).toBeUndefined();
    expect(cache.get('1', 'a', '8')).toBe(last);
    expect(cache.size).toBe(4);
  });
});
