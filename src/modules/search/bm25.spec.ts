import { bm25Ceiling, rankBm25 } from 'src/modules/search/bm25.js';
import type { Postings } from 'src/modules/chunk-index/postings.repository.js';

/** A deterministic pseudo-random generator, so that a failure can be replayed. */
function generator(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
}

/** Postings as the cache holds them. */
function postings(entries: [chunk: number, tf: number, length: number][]): Postings {
  return {
    chunks: Float64Array.from(entries.map(([chunk]) => chunk)),
    tf: Uint32Array.from(entries.map(([, tf]) => tf)),
    length: Uint32Array.from(entries.map(([, , length]) => length)),
  };
}

/**
 * A corpus of `terms` with the given document frequencies over random chunks of 5,000, fixed per
 * seed, the chunks numbered `spread` apart: far apart, `rankBm25` adds scores in a hash table; close
 * together (as a dataset's chunks are), in an array over their range.
 */
function corpus(seed: number, dfs: number[], spread = 7919): Postings[] {
  const random = generator(seed);
  const lengths = new Map<number, number>();
  return dfs.map((df) => {
    const chunks = new Set<number>();
    while (chunks.size < df) chunks.add(1 + Math.floor(random() * 5000) * spread);
    return postings(
      [...chunks].map((chunk) => {
        if (!lengths.has(chunk)) lengths.set(chunk, 1 + Math.floor(random() * 60));
        return [chunk, 1 + Math.floor(random() * 3), lengths.get(chunk)!];
      }),
    );
  });
}

/** The formula, written out plainly over the same postings. */
function reference(terms: Postings[], n: number, total: number, k1 = 1.2, b = 0.75): Map<number, number> {
  const avgdl = total / n;
  const scores = new Map<number, number>();
  for (const term of terms) {
    const df = term.chunks.length;
    const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
    term.chunks.forEach((chunk, i) => {
      const tf = term.tf[i];
      const part = (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * term.length[i]) / avgdl));
      scores.set(chunk, (scores.get(chunk) ?? 0) + part);
    });
  }
  return scores;
}

describe('rankBm25', () => {
  const parameters = { k1: 1.2, b: 0.75 };

  it('scores every matching chunk as the formula does and ranks the k best, best first', () => {
    const terms = corpus(7, [3000, 800, 120, 5]);
    const expected = reference(terms, 9000, 9000 * 30);
    const kth = [...expected.values()].sort((a, b) => b - a)[49];

    const { ranked, matched } = rankBm25(terms, 9000, 9000 * 30, parameters, 50);
    expect(matched).toBe(expected.size);
    expect(ranked).toHaveLength(50);
    ranked.forEach(({ chunk, score }, i) => {
      expect(Math.abs(score - expected.get(chunk)!)).toBeLessThan(1e-9);
      expect(score).toBeGreaterThan(kth - 1e-9);
      if (i > 0) expect(score).toBeLessThanOrEqual(ranked[i - 1].score);
    });
    // Asking for more than matched returns them all, best first.
    const all = rankBm25(terms, 9000, 9000 * 30, parameters, 1_000_000).ranked;
    expect(all.map(({ chunk }) => chunk).sort((a, b) => a - b)).toEqual(
      [...expected.keys()].sort((a, b) => a - b),
    );
    all.forEach(({ score }, i) => i > 0 && expect(score).toBeLessThanOrEqual(all[i - 1].score));
  });

  it('ranks chunks numbered close together exactly as chunks far apart', () => {
    const check = (seed: number, dfs: number[], offset: number) => {
      const near = corpus(seed, dfs, 1).map((term) => ({
        ...term,
        chunks: term.chunks.map((c) => c + offset),
      }));
      const far = corpus(seed, dfs);
      const expected = reference(near, 9000, 9000 * 30);
      const a = rankBm25(near, 9000, 9000 * 30, parameters, 60);
      expect(a.matched).toBe(expected.size);
      a.ranked.forEach(({ chunk, score }) =>
        expect(Math.abs(score - expected.get(chunk)!)).toBeLessThan(1e-9),
      );
      const b = rankBm25(far, 9000, 9000 * 30, parameters, 60);
      expect(b.matched).toBe(a.matched);
      // The same chunks in the same order (index i is chunk 1 + i near, 1 + i·7919 far), the same sums.
      expect(a.ranked.map(({ chunk, score }) => [(chunk - offset - 1) * 7919 + 1, score])).toEqual(
        b.ranked.map(({ chunk, score }) => [chunk, score]),
      );
    };
    check(7, [3000, 800, 120, 5], 0);
    // Again over other ranges, after a larger query and after one too sparse for the array (41
    // postings over 5,000 chunks go to the hash table): nothing carried over.
    check(11, [4000, 2500, 40], 2 ** 40);
    check(13, [30, 9, 2], 10_000);
    check(17, [200, 100, 50], 1_000_000);
  });

  it('ranks only the chunks asked for, with the dataset’s statistics, in either accumulator', () => {
    for (const spread of [1, 7919]) {
      const terms = corpus(23, [3000, 800, 120, 5], spread);
      const expected = reference(terms, 9000, 9000 * 30);
      // One matching chunk in twenty, and a chunk that matches no term.
      const only = new Set([...expected.keys()].filter((_, i) => i % 20 === 0));
      only.add(10 ** 9);
      const best = [...only]
        .filter((chunk) => expected.has(chunk))
        .sort((a, b) => expected.get(b)! - expected.get(a)! || a - b)
        .slice(0, 40);

      const { ranked, matched } = rankBm25(terms, 9000, 9000 * 30, parameters, 40, only);
      expect(ranked.map(({ chunk }) => chunk)).toEqual(best);
      ranked.forEach(({ chunk, score }) => expect(Math.abs(score - expected.get(chunk)!)).toBeLessThan(1e-9));
      expect(matched).toBe(expected.size);
    }
  });

  it('breaks ties by the lower chunk', () => {
    const term = postings([
      [90, 1, 10],
      [12, 1, 10],
      [55, 1, 10],
      [7, 2, 10],
    ]);
    const { ranked } = rankBm25([term], 100, 1000, parameters, 3);
    expect(ranked.map(({ chunk }) => chunk)).toEqual([7, 12, 55]);
  });

  it('starts afresh on every call, after a large query and a small one alike', () => {
    const large = postings(Array.from({ length: 200_000 }, (_, i) => [i + 1, 1, 10]));
    expect(rankBm25([large], 300_000, 3_000_000, parameters, 10).matched).toBe(200_000);
    const small = postings([
      [3, 1, 10],
      [150_000, 2, 10],
    ]);
    const { ranked, matched } = rankBm25([small, small], 300_000, 3_000_000, parameters, 10);
    expect(matched).toBe(2);
    expect(ranked.map(({ chunk }) => chunk)).toEqual([150_000, 3]);
    // Dense and small, after dense and large (the array shrinks).
    rankBm25([large], 300_000, 3_000_000, parameters, 10);
    const close = postings([
      [7, 1, 10],
      [8, 2, 10],
      [9, 1, 50],
    ]);
    const after = rankBm25([close], 300_000, 3_000_000, parameters, 10);
    expect(after.matched).toBe(3);
    expect(after.ranked.map(({ chunk }) => chunk)).toEqual([8, 7, 9]);
    expect(rankBm25([], 10, 100, parameters, 10)).toEqual({ ranked: [], matched: 0 });
  });

  it('forgets the previous call’s scores when it reuses their array', () => {
    // Chunks numbered close together: both calls add up scores in the same array, over ranges that overlap.
    for (const [seed, dfs] of [
      [3, [3000, 900]],
      [4, [2500, 60, 7]],
      [5, [2000]],
    ] as const) {
      const terms = corpus(seed, [...dfs], 1);
      const expected = reference(terms, 9000, 9000 * 30);
      const { ranked, matched } = rankBm25(terms, 9000, 9000 * 30, parameters, 1_000_000);
      expect(matched).toBe(expected.size);
      for (const { chunk, score } of ranked)
        expect(Math.abs(score - expected.get(chunk)!)).toBeLessThan(1e-9);
    }
  });

  it('keeps chunk seqs beyond 2^32 apart', () => {
    const term = postings([
      [2 ** 33 + 1, 1, 10],
      [1, 1, 10],
      [2 ** 40 + 1, 2, 10],
    ]);
    const { ranked, matched } = rankBm25([term, term], 10, 100, parameters, 10);
    expect(matched).toBe(3);
    expect(ranked.map(({ chunk }) => chunk)).toEqual([2 ** 40 + 1, 1, 2 ** 33 + 1]);
  });
});

describe('bm25Ceiling', () => {
  const parameters = { k1: 1.2, b: 0.75 };

  it('sums idf·(k1+1) over the query terms, a term no chunk holds at the idf of df 0', () => {
    const idf = (df: number) => Math.log(1 + (100 - df + 0.5) / (df + 0.5));
    expect(bm25Ceiling([10, 0], 100, parameters)).toBeCloseTo((idf(10) + idf(0)) * 2.2, 12);
    expect(bm25Ceiling([], 100, parameters)).toBe(0);
  });

  it('lies above the score of any chunk, however often it holds the terms', () => {
    const terms = corpus(7, [40, 300, 5]);
    const { ranked } = rankBm25(terms, 5000, 5000 * 30, parameters, 1);
    const ceiling = bm25Ceiling(
      terms.map(({ chunks }) => chunks.length),
      5000,
      parameters,
    );
    expect(ranked[0].score).toBeLessThan(ceiling);
    expect(ranked[0].score).toBeGreaterThan(ceiling / 10);
  });
});
