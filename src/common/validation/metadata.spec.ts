import { AppError } from 'src/common/errors/app-error.js';
import { mergeMetadata, metadataIssue, patchedMetadata } from 'src/common/validation/metadata.js';

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
    [{ a: 'nul\u0000' }, 'must not contain the character U+0000'],
    [{ 'k\u0000': 1 }, 'must not contain the character U+0000'],
    [{ a: ['\ud800'] }, 'must not contain unpaired UTF-16 surrogates'],
    [{ a: { '\udfff': 1 } }, 'must not contain unpaired UTF-16 surrogates'],
    [{ a: [1, Infinity] }, 'must not hold numbers beyond ±1.8e308'],
    [JSON.parse('{"a": {"constructor": 1}}'), 'must not use the reserved key "constructor"'],
    [{ a: { $x: 1 } }, 'key "a.$x" must not start with "$"'],
    [{ a: { b: [{ $in: 1 }] } }, 'key "a.b[0].$in" must not start with "$"'],
    [{ a: { '': 1 } }, 'keys must be 1-256 characters (a key in "a")'],
    [{ a: [{ ['k'.repeat(257)]: 1 }] }, 'keys must be 1-256 characters (a key in "a[0]")'],
    [{ a: { b: null } }, 'key "a.b" must not be null'],
    [{ a: { b: { c: null } } }, 'key "a.b.c" must not be null'],
    [{ a: ['x', null] }, '"a[1]" must not be null'],
  ])('refuses %j: %s', (value, issue) => {
    expect(metadataIssue(value)).toBe(issue);
  });

  it('applies the key rules at every level, and accepts keys of 256 characters there', () => {
    const key = '🔎'.repeat(256);
    expect(metadataIssue({ a: { [key]: { [key]: [{ [key]: 'x' }] } } })).toBeNull();
    expect(metadataIssue({ a: { b: { c: { d: { ['$e']: 1 } } } } })).toBe(
      'key "a.b.c.d.$e" must not start with "$"',
    );
  });

  it('lets a PATCH remove top-level keys with null, but not nested ones, which would be stored', () => {
    expect(metadataIssue({ a: null, b: { c: 1 } }, true)).toBeNull();
    expect(metadataIssue({ a: { b: null } }, true)).toBe('key "a.b" must not be null');
    expect(metadataIssue({ a: [null] }, true)).toBe('"a[0]" must not be null');
  });

  it('accepts characters outside the BMP, whose surrogates come in pairs', () => {
    expect(metadataIssue({ emoji: '😀 ok', '𝄞': 'clef' })).toBeNull();
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

  it('keeps a key named __proto__ as a key, rather than setting the prototype', () => {
    const patch = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    const merged = mergeMetadata({ a: 1 }, patch);
    expect(Object.keys(merged)).toEqual(['a', '__proto__']);
    expect(JSON.stringify(merged)).toBe('{"a":1,"__proto__":{"polluted":true}}');
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
  });
});

describe('patchedMetadata', () => {
  it('merges a patch whose result is within the limits', () => {
    expect(patchedMetadata({ a: 1, b: 2 }, { b: null, c: 3 })).toEqual({ a: 1, c: 3 });
  });

  it('refuses a merge over the key limit as invalid_metadata, though each half is within it', () => {
    const half = (prefix: string) =>
      Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`${prefix}${i}`, i]));
    let thrown: unknown;
    try {
      patchedMetadata(half('a'), half('b'));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(AppError);
    expect((thrown as AppError).code).toBe('invalid_metadata');
    expect((thrown as AppError).message).toContain('after merging, must have at most 64 keys');
  });
});
