import { mergeMetadata, metadataIssue } from 'src/common/validation/metadata.js';

describe('metadataIssue', () => {
  it('accepts ordinary metadata', () => {
    expect(metadataIssue({ title: 'Guide', tags: ['a', 'b'], nested: { level: 2 } })).toBeNull();
  });

  it.each([
    [[], 'must be a JSON object'],
    [null, 'must be a JSON object'],
    ['text', 'must be a JSON object'],
    [{ '': 1 }, 'keys must be 1-256 characters'],
    [{ $in: [1] }, 'key "$in" must not start with "$"'],
    [{ a: null }, 'key "a" must not be null'],
    [{ a: { b: { c: { d: { e: { f: 1 } } } } } }, 'must be nested at most 5 levels deep'],
    [{ a: [[[[[1]]]]] }, 'must be nested at most 5 levels deep'],
  ])('refuses %j: %s', (value, issue) => {
    expect(metadataIssue(value)).toBe(issue);
  });

  it('allows null values where a PATCH removes keys', () => {
    expect(metadataIssue({ a: null }, true)).toBeNull();
  });

  it('measures size in UTF-8 bytes', () => {
    // 5,500 three-byte characters: 16.5 KB although only 5,500 UTF-16 units.
    expect(metadataIssue({ text: '€'.repeat(5_500) })).toBe('must be at most 16384 bytes as JSON');
    expect(metadataIssue({ text: 'e'.repeat(16_000) })).toBeNull();
  });

  it('stops walking a very deep structure once it is too deep', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(metadataIssue({ deep })).toBe('must be nested at most 5 levels deep');
  });
});

describe('mergeMetadata', () => {
  it('replaces, adds and removes keys without touching the original', () => {
    const current = { keep: 1, change: 'old', drop: true };
    expect(mergeMetadata(current, { change: 'new', drop: null, add: 2 })).toEqual({
      keep: 1,
      change: 'new',
      add: 2,
    });
    expect(current).toEqual({ keep: 1, change: 'old', drop: true });
  });
});
