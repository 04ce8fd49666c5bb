import {
  figuresOf,
  meanFigures,
  mrrAt10,
  ndcgAt10,
  rankedDocuments,
  recallAt100,
} from 'src/modules/search/evaluation/metrics.js';

const judged = (entries: [string, number][]) => new Map(entries);

describe('rankedDocuments', () => {
  it('keeps each document at its first chunk, within the first chunks of known documents', () => {
    expect(rankedDocuments(['a', 'b', 'a', 'c', 'b', 'd'], 4)).toEqual(['a', 'b', 'c']);
    expect(rankedDocuments(['a', 'b', 'a', 'c', 'b', 'd'], 6)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('passes over chunks deleted since they were ranked, as a search does', () => {
    expect(rankedDocuments(['a', undefined, 'b', undefined, 'c'], 2)).toEqual(['a', 'b']);
  });
});

describe('nDCG@10', () => {
  it('is 1 for the ideal order and counts each rank by 1 / log2(rank + 1)', () => {
    const relevant = judged([
      ['a', 2],
      ['b', 1],
    ]);
    expect(ndcgAt10(['a', 'b', 'x'], relevant)).toBe(1);
    // b then a: (1 + 2 / log2 3) / (2 + 1 / log2 3)
    expect(ndcgAt10(['b', 'a'], relevant)).toBeCloseTo((1 + 2 / Math.log2(3)) / (2 + 1 / Math.log2(3)), 12);
    // a relevant document at rank 3, alone judged: 1 / log2 4 = 0.5
    expect(ndcgAt10(['x', 'y', 'a'], judged([['a', 1]]))).toBe(0.5);
  });

  it('counts only the first 10 documents, against the best 10 grades', () => {
    const ranking = [...'0123456789'].map((d) => `x${d}`).concat('a');
    expect(ndcgAt10(ranking, judged([['a', 1]]))).toBe(0);
    const many = judged([...'abcdefghijkl'].map((id): [string, number] => [id, 1]));
    expect(ndcgAt10([...'abcdefghij'], many)).toBe(1);
  });
});

describe('Recall@100 and MRR@10', () => {
  it('finds the relevant share of the first 100 documents', () => {
    const ranking = Array.from({ length: 120 }, (_, i) => `d${i}`);
    expect(
      recallAt100(
        ranking,
        judged([
          ['d0', 1],
          ['d99', 1],
          ['d100', 1],
          ['gone', 1],
        ]),
      ),
    ).toBe(0.5);
  });

  it('is 1 / the rank of the first relevant document within 10, else 0', () => {
    expect(
      mrrAt10(
        ['x', 'y', 'a', 'b'],
        judged([
          ['b', 1],
          ['a', 3],
        ]),
      ),
    ).toBe(1 / 3);
    expect(
      mrrAt10(
        [...'xxxxxxxxxx', 'a'].map((d, i) => `${d}${i}`),
        judged([['a10', 1]]),
      ),
    ).toBe(0);
  });
});

describe('figures over queries', () => {
  it('gives each query its figures unrounded, and their means to 4 decimals', () => {
    const first = figuresOf(['b', 'a'], judged([['a', 1]]));
    expect(first).toEqual({ ndcg_at_10: 1 / Math.log2(3), recall_at_100: 1, mrr_at_10: 0.5 });
    const second = figuresOf(['x'], judged([['a', 1]]));
    expect(meanFigures([first, second])).toEqual({ ndcg_at_10: 0.3155, recall_at_100: 0.5, mrr_at_10: 0.25 });
  });
});
