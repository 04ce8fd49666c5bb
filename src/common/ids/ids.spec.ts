import { isId, newId, randomBase62, shownId } from 'src/common/ids/ids.js';

describe('ids', () => {
  it('makes prefixed ids of 22 base62 characters', () => {
    const id = newId('ds');
    expect(id).toMatch(/^ds_[0-9A-Za-z]{22}$/);
  });

  it('never repeats in a large sample', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newId('doc')));
    expect(ids.size).toBe(10_000);
  });

  it('draws every character of an id from all 62, each as likely as the others', () => {
    const first = new Set(Array.from({ length: 10_000 }, () => newId('chk')[4]));
    expect(first.size).toBe(62);
    // Chi-squared over 620,000 characters: 61 degrees of freedom, below 130 but once in a million
    // uniform runs; `byte % 62` without drawing again makes characters 0-7 a quarter likelier (> 3,000).
    const counts = new Map<string, number>();
    for (const char of randomBase62(620_000)) counts.set(char, (counts.get(char) ?? 0) + 1);
    expect(counts.size).toBe(62);
    const expected = 10_000;
    const chiSquared = [...counts.values()].reduce((sum, n) => sum + (n - expected) ** 2 / expected, 0);
    expect(chiSquared).toBeLessThan(130);
  });

  it('recognises only ids of the named type', () => {
    const id = newId('ds');
    expect(isId('ds', id)).toBe(true);
    expect(isId('doc', id)).toBe(false);
    expect(isId('ds', `${id}x`)).toBe(false);
    expect(isId('ds', "ds_' OR 1=1 --")).toBe(false);
  });
});

describe('shownId', () => {
  it('keeps an id of up to 64 characters whole', () => {
    expect(shownId('ds_4Jq0Zt6mYwQ1bR8sVx3nLp')).toBe('ds_4Jq0Zt6mYwQ1bR8sVx3nLp');
    expect(shownId('x'.repeat(64))).toBe('x'.repeat(64));
  });

  it('cuts a longer one, never between the halves of a surrogate pair', () => {
    expect(shownId('x'.repeat(65))).toBe(`${'x'.repeat(64)}…`);
    // The 64th unit is the first half of an emoji: the cut comes before it.
    expect(shownId(`${'x'.repeat(63)}😀${'x'.repeat(10)}`)).toBe(`${'x'.repeat(63)}…`);
  });
});
