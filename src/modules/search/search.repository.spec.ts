import { nextRound } from 'src/modules/search/search.repository.js';

describe('nextRound (the keyword leg under a filter)', () => {
  it('checks four times as many when none of those checked passed', () => {
    expect(nextRound(50, 0, 100)).toBe(400);
  });

  it('checks enough for the missing ones at the share that passed, with half as many again', () => {
    // A third passed: 17 are missing, about 52 more would hold them; 78 with the margin.
    expect(nextRound(50, 33, 100)).toBe(78);
  });

  it('checks at least `limit` more, however few are missing', () => {
    expect(nextRound(50, 49, 100)).toBe(50);
  });

  it('grows at most sixteenfold a round, so that one lucky pass does not read the whole match set', () => {
    expect(nextRound(50, 1, 100)).toBe(1_600);
  });
});
