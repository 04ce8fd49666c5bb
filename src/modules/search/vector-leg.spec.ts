import { scansExactly } from 'src/modules/search/vector-leg.js';

describe('scansExactly (the vector leg: exact scan or HNSW walk)', () => {
  it('walks the index for a dataset that has it to itself, above 1,500 chunks (50 candidates)', () => {
    expect(scansExactly({ chunks: 1_500, indexed: 1_500 }, 50, 20_000)).toBe(true);
    expect(scansExactly({ chunks: 1_501, indexed: 1_501 }, 50, 20_000)).toBe(false);
    expect(scansExactly({ chunks: 15_000, indexed: 15_000 }, 50, 20_000)).toBe(false);
  });

  it('scans a dataset that holds a small share of the index', () => {
    // 10,000 chunks among 135,000: the walk passes 13.5 for each of its own, 20,250 rows' worth.
    expect(scansExactly({ chunks: 10_000, indexed: 135_000 }, 50, 20_000)).toBe(true);
    expect(scansExactly({ chunks: 15_000, indexed: 135_000 }, 50, 20_000)).toBe(false);
  });

  it('counts a deeper search as a longer walk', () => {
    expect(scansExactly({ chunks: 2_000, indexed: 2_000 }, 50, 20_000)).toBe(false);
    expect(scansExactly({ chunks: 2_000, indexed: 2_000 }, 100, 20_000)).toBe(true);
  });

  it('never scans beyond the configured size, and always walks when it is 0', () => {
    expect(scansExactly({ chunks: 25_000, indexed: 10_000_000 }, 50, 20_000)).toBe(false);
    expect(scansExactly({ chunks: 10, indexed: 10 }, 50, 0)).toBe(false);
  });

  it("scans the chunks of a filter's documents when they are a small share of the index", () => {
    // 6,000 of a 60,000-chunk dataset's chunks pass: the walk would pass 10 for each it finds.
    expect(scansExactly({ chunks: 6_000, indexed: 60_000 }, 50, 20_000)).toBe(true);
    // Half of them pass: the walk finds one in two.
    expect(scansExactly({ chunks: 30_000, indexed: 60_000 }, 50, 20_000)).toBe(false);
  });

  it('takes a count of the index older than the dataset as the dataset alone', () => {
    expect(scansExactly({ chunks: 1_000, indexed: 0 }, 50, 20_000)).toBe(true);
    expect(scansExactly({ chunks: 5_000, indexed: 0 }, 50, 20_000)).toBe(false);
  });
});
