import { scansExactly } from 'src/modules/search/vector-leg.js';

describe('scansExactly (the vector leg: exact scan or HNSW walk)', () => {
  it('walks the index for a dataset that has it to itself, above 1,500 chunks (50 candidates)', () => {
    expect(scansExactly({ chunks: 1_500, indexed: 1_500, filtered: false }, 50, 20_000)).toBe(true);
    expect(scansExactly({ chunks: 1_501, indexed: 1_501, filtered: false }, 50, 20_000)).toBe(false);
    expect(scansExactly({ chunks: 15_000, indexed: 15_000, filtered: false }, 50, 20_000)).toBe(false);
  });

  it('scans a dataset that holds a small share of the index', () => {
    // 10,000 chunks among 135,000: the walk passes 13.5 for each of its own, 20,250 rows' worth.
    expect(scansExactly({ chunks: 10_000, indexed: 135_000, filtered: false }, 50, 20_000)).toBe(true);
    expect(scansExactly({ chunks: 15_000, indexed: 135_000, filtered: false }, 50, 20_000)).toBe(false);
  });

  it('counts a deeper search as a longer walk', () => {
    expect(scansExactly({ chunks: 2_000, indexed: 2_000, filtered: false }, 50, 20_000)).toBe(false);
    expect(scansExactly({ chunks: 2_000, indexed: 2_000, filtered: false }, 100, 20_000)).toBe(true);
  });

  it('never scans beyond the configured size, and always walks when it is 0', () => {
    expect(scansExactly({ chunks: 25_000, indexed: 10_000_000, filtered: false }, 50, 20_000)).toBe(false);
    expect(scansExactly({ chunks: 10, indexed: 10, filtered: false }, 50, 0)).toBe(false);
  });

  it('scans a dataset within the cap under a metadata filter, whose share of the index is unknown', () => {
    expect(scansExactly({ chunks: 15_000, indexed: 15_000, filtered: true }, 50, 20_000)).toBe(true);
    expect(scansExactly({ chunks: 25_000, indexed: 25_000, filtered: true }, 50, 20_000)).toBe(false);
  });

  it('takes a count of the index older than the dataset as the dataset alone', () => {
    expect(scansExactly({ chunks: 1_000, indexed: 0, filtered: false }, 50, 20_000)).toBe(true);
    expect(scansExactly({ chunks: 5_000, indexed: 0, filtered: false }, 50, 20_000)).toBe(false);
  });
});
