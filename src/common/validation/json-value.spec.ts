import { codePointCount, isVisibleText, labelIssue } from 'src/common/validation/json-value.js';

describe('codePointCount', () => {
  it.each([
    ['', 0],
    ['abc', 3],
    ['🔎', 1],
    ['a\ufe0f', 2],
    ['\ud800', 1],
    ['\udc00\ud800', 2],
    ['\ud800\ud800\udc00', 2],
    ['x\ud83d\udd0e\ud83d', 3],
  ])('counts %j as %i', (value, expected) => {
    expect(codePointCount(value)).toBe(expected);
  });

  it('counts as the string iterator does, on strings of random UTF-16 units', () => {
    const units = [0x61, 0xe9, 0xfe0f, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xd83d, 0xdd0e];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let n = 0; n < 500; n++) {
      const value = String.fromCharCode(
        ...Array.from({ length: next() % 12 }, () => units[next() % units.length]),
      );
      expect(codePointCount(value)).toBe([...value].length);
    }
  });
});

describe('isVisibleText', () => {
  it.each(['a', ' x ', '\u200b.', '日本', '😀', '\u00a0-'])('sees %j', (text) => {
    expect(isVisibleText(text)).toBe(true);
  });

  it.each(['', ' \n\t', '\u200b\u200c\u200d', '\ufeff\u2060', '\u0007\u0000', '\u00a0\u3000'])(
    'sees nothing in %j',
    (text) => {
      expect(isVisibleText(text)).toBe(false);
    },
  );

  // Each of these alone was a ready document of one blank chunk, and a query that matched nothing.
  it.each([
    ['the Hangul filler', '\u3164'],
    ['the Hangul choseong filler', '\u115f'],
    ['the Hangul jungseong filler', '\u1160'],
    ['the halfwidth Hangul filler', '\uffa0'],
    ['the combining grapheme joiner', '\u034f'],
    ['the Khmer inherent vowel AQ', '\u17b4'],
    ['the Khmer inherent vowel AA', '\u17b5'],
    ['a variation selector', '\ufe0f'],
    ['a supplementary variation selector', '\udb40\udd00'],
    ['the braille pattern blank', '\u2800'],
    ['the object replacement character', '\ufffc'],
    ['a tag character', '\udb40\udc20'],
    ['the soft hyphen', '\u00ad'],
    ['all of them with white space', ' \u3164\u2800\ufffc\n\u115f\ufe0f '],
  ])('sees nothing in %s alone', (_name, text) => {
    expect(isVisibleText(text)).toBe(false);
  });

  it.each(['\u3164a', 'ㄱ', '한', '\u2801', '❤\ufe0f', '\ufffd'])(
    'still sees %j, beside or near the invisible ones',
    (text) => {
      expect(isVisibleText(text)).toBe(true);
    },
  );
});

describe('labelIssue', () => {
  it.each(['Docs', 'Caf\u00e9', '\u2764\ufe0f', 'a\u200bb', '日本語 データ', 'tab\u00a0less'])(
    'accepts %j',
    (label) => {
      expect(labelIssue(label)).toBeNull();
    },
  );

  it.each([
    ['\u0007', 'must not contain control characters'],
    ['\u001b[31mred', 'must not contain control characters'],
    ['a\tb', 'must not contain control characters'],
    ['a\u007fb', 'must not contain control characters'],
    ['a\u009bb', 'must not contain control characters'],
    ['line\u2028break', 'must not contain control characters'],
    ['para\u2029break', 'must not contain control characters'],
    ['\u200b', 'must contain visible text'],
    ['\u00ad', 'must contain visible text'],
    ['\u3164\u2800', 'must contain visible text'],
    ['', 'must contain visible text'],
  ])('refuses %j: %s', (label, issue) => {
    expect(labelIssue(label)).toBe(issue);
  });
});
