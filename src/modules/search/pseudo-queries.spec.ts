import { KEPT_SHARE, pseudoQuery } from 'src/modules/search/pseudo-queries.js';

const TEXT =
  'Short one. The mitochondria produce most of the energy a cell uses through oxidative phosphorylation. ' +
  'Ribosomes read messenger RNA and join amino acids into the proteins the cell needs to live.';

function isSubsequence(words: string[], sentence: string[]): boolean {
  let at = 0;
  for (const word of words) {
    while (at < sentence.length && sentence[at] !== word.replace(/\.$/, '')) at++;
    if (at++ === sentence.length) return false;
  }
  return true;
}

describe('pseudoQuery', () => {
  it("keeps about half the words of one of the text's long sentences, in their order, the same for the same seed", () => {
    const sentences = TEXT.split('. ')
      .slice(1)
      .map((s) => s.replace(/\.$/, '').split(' '));
    for (let seed = 1; seed <= 20; seed++) {
      const query = pseudoQuery(TEXT, seed)!;
      expect(pseudoQuery(TEXT, seed)).toBe(query);
      const words = query.split(' ');
      // A subsequence of one sentence: its words, in its order.
      const source = sentences.find((sentence) => isSubsequence(words, sentence));
      expect(source).toBeDefined();
      expect(words.length).toBeLessThan(source!.length);
    }
    const lengths = Array.from({ length: 200 }, (_, seed) => pseudoQuery(TEXT, seed)!.split(' ').length);
    const mean = lengths.reduce((sum, n) => sum + n, 0) / lengths.length;
    expect(mean / 14).toBeGreaterThan(KEPT_SHARE - 0.15);
    expect(mean / 14).toBeLessThan(KEPT_SHARE + 0.15);
  });

  it('gives none for a text without a sentence of 8 words or more', () => {
    expect(pseudoQuery('Too short. Also short here.', 3)).toBeNull();
    expect(pseudoQuery('', 3)).toBeNull();
  });
});
