import {
  changedLexemeSource,
  checkLexemeTable,
  INDEXED_LEXEME_TABLE,
  lexemeSource,
  lexemeTableDigest,
  mappedLexemeSource,
} from 'src/modules/chunk-index/lexeme-source.js';

describe('lexemeSource', () => {
  it('returns ASCII text as it is', () => {
    const text = 'Plain ASCII text, with punctuation (and digits: 42).\n';
    expect(lexemeSource(text)).toBe(text);
  });

  it.each([
    ['a decomposed accent (NFD)', 'résumé café'.normalize('NFD'), 'résumé café'.normalize('NFC')],
    ['ligatures', 'ﬁnancial oﬃce ﬂow', 'financial office flow'],
    ['full-width letters and digits', 'Ｔｏｋｙｏ ２０２４', 'Tokyo 2024'],
    ['the micro sign, as Greek mu', '5 µg', '5 μg'],
    ['mathematical alphanumerics', '𝐁𝐨𝐥𝐝 𝟏', 'Bold 1'],
    ['half-width kana with their voiced mark (then cut into pairs)', 'ｶﾞｲﾄﾞ', 'ガイ イド'],
    ['a full-width letter before a combining accent', 'Ｅ\u0301', 'É'],
    ['full-width punctuation', '３．１４ ｅ－ｍａｉｌ （ａｔ）', '3.14 e-mail (at)'],
    ['a soft hyphen inside a word', 'infor\u00ADmation', 'information'],
    ['a word joiner and a zero-width no-break space', 'in\u2060for\uFEFFmation', 'information'],
    ['variation selectors, standard and ideographic', '葛\u{E0100}飾区 葛\uFE00飾区', '葛飾 飾区 葛飾 飾区'],
    ['a soft hyphen between a letter and its accent', 'e\u00AD\u0301', 'é'],
  ])('reads %s as the text a reader sees', (_, text, expected) => {
    expect(lexemeSource(text)).toBe(expected);
  });

  it.each([
    ['footnote markers', 'results¹ and findings²'],
    ['subscripts', 'CO₂ and H₂O'],
    ['superscript and subscript letters', 'xⁿ, tʰ, aᵢ, 1ª'],
    ['symbols of letters', 'Acme™ ℠ ℃ Ⓐ ㎏'],
    ['vulgar fractions and Roman numerals', '½ Ⅻ'],
    ['letters whose compatibility form holds a space or a sign', 'coŀlecció ﹶ ﷺ'],
  ])('keeps %s as written', (_, text) => {
    expect(lexemeSource(text)).toBe(text);
  });

  it('gives the changed lexeme source only where it differs from the text', () => {
    expect(changedLexemeSource('Plain text, ﬁ-free')).toBe('Plain text, fi-free');
    expect(changedLexemeSource('Plain text')).toBeNull();
    expect(changedLexemeSource('résumé, results¹')).toBeNull();
  });

  it('changes only what it must in text that mixes both', () => {
    expect(lexemeSource('The ﬁrst result¹ of Ｔｅａｍ™ （東京）')).toBe(
      'The first result¹ of Team™ ( 東京 )',
    );
  });

  it.each([
    ['Chinese', '全文检索引擎', '全文 文检 检索 索引 引擎'],
    ['Japanese, kanji and kana together', '東京都に行く', '東京 京都 都に に行 行く'],
    ['Katakana with the prolonged sound mark', 'ビール', 'ビー ール'],
    ['Thai, each character with its marks', 'สวัสดี', 'สวั วัส สดี'],
    ['Lao', 'ສະບາຍດີ', 'ສະ ະບ ບາ າຍ ຍດີ'],
    ['Khmer, a subscript consonant after its sign', 'សួស្តី', 'សួស្ ស្តី'],
    ['Myanmar', 'မင်္ဂလာ', 'မင်္ င်္ဂ ဂလာ'],
  ])('cuts %s into overlapping pairs', (_, text, expected) => {
    expect(lexemeSource(text)).toBe(expected);
  });

  it('cuts a run at signs and at other scripts, and keeps one or two characters as they are', () => {
    expect(lexemeSource('東京、日本。「とうきょう」')).toBe('東京 、 日本 。「 とう うき きょ ょう 」');
    expect(lexemeSource('iPhone発売')).toBe('iPhone 発売');
    expect(lexemeSource('猫 and 犬')).toBe('猫 and 犬');
    expect(lexemeSource('第3章')).toBe('第 3 章');
  });

  it('ends a run at white space of ASCII only, which the parser ends a word at under any locale', () => {
    expect(lexemeSource('東京\u3000大阪')).toBe('東京 \u3000 大阪');
    expect(lexemeSource('東京 大阪')).toBe('東京 大阪');
  });

  it('leaves Hangul, which is written with spaces, as it is', () => {
    expect(lexemeSource('한국어 문장 검색')).toBe('한국어 문장 검색');
  });

  it('gives a cut text as its own cut', () => {
    const source = lexemeSource('日本語の全文検索、タイ語 ภาษาไทย');
    expect(lexemeSource(source)).toBe(source);
  });

  it('is idempotent and gives NFC text for every letter and digit beyond ASCII, before an accent', () => {
    const characters: string[] = [];
    for (let cp = 0x80; cp <= 0x2ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const character = String.fromCodePoint(cp);
      if (/^[\p{L}\p{Nd}]$/u.test(character)) characters.push(character);
    }
    const text = characters.join('\u0301 ');
    const source = lexemeSource(text);
    expect(source.normalize('NFC')).toBe(source);
    expect(lexemeSource(source)).toBe(source);
  });

  it("builds the table the stored index was built with, on this runtime's Unicode data", () => {
    // A new runtime that maps a character otherwise needs a migration that indexes its chunks again.
    expect(lexemeTableDigest()).toBe(INDEXED_LEXEME_TABLE);
    expect(() => checkLexemeTable()).not.toThrow();
  });
});

describe('mappedLexemeSource', () => {
  /** Each unit of the source with the text it was read from. */
  function pieces(text: string): [string, string][] {
    const { source, from, to } = mappedLexemeSource(text);
    return [...source].map((_, i) => [source[i], from ? text.slice(from[i], to![i]) : text[i]]);
  }

  it('gives the text itself, unmapped, where the source is the text', () => {
    expect(mappedLexemeSource('Plain text, résumé')).toEqual({
      source: 'Plain text, résumé',
      from: null,
      to: null,
    });
  });

  it('maps a composed accent to its decomposed letters and a full-width letter to itself', () => {
    const text = 'cafe\u0301 Ｔｏ';
    const { source } = mappedLexemeSource(text);
    expect(source).toBe('café To');
    expect(pieces(text)).toEqual([
      ['c', 'c'],
      ['a', 'a'],
      ['f', 'f'],
      ['é', 'e\u0301'],
      [' ', ' '],
      ['T', 'Ｔ'],
      ['o', 'ｏ'],
    ]);
  });

  it('maps a word around a soft hyphen to all of it, hyphen included', () => {
    const text = 'infor\u00ADmation';
    const { source, from, to } = mappedLexemeSource(text);
    expect(source).toBe('information');
    expect(text.slice(from![0], to![source.length - 1])).toBe(text);
  });

  it('maps each pair of a cut run to its two characters, and an inserted space to nothing', () => {
    const text = 'iPhone発売日';
    const { source, from, to } = mappedLexemeSource(text);
    expect(source).toBe('iPhone 発売 売日');
    const token = (t: string, nth = 0) => {
      let at = -1;
      for (let k = 0; k <= nth; k++) at = source.indexOf(t, at + 1);
      return text.slice(from![at], to![at + t.length - 1]);
    };
    expect(token('発売')).toBe('発売');
    expect(token('売日')).toBe('売日');
    expect(from![6]).toBe(to![6]);
  });

  it.each([
    'The ﬁrst result¹ of Ｔｅａｍ™ （東京）',
    '東京、日本。「とうきょう」 ｶﾞｲﾄﾞ ㄱㅏ 葛\u{E0100}飾区',
    'e\u00AD\u0301 Ｅ\u0301 coŀlecció 5 µg 𝐁𝐨𝐥𝐝',
    'สวัสดี ສະບາຍດີ សួស្តី မင်္ဂလာ 한국어',
  ])('gives the same source as lexemeSource for %s', (text) => {
    expect(mappedLexemeSource(text).source).toBe(lexemeSource(text));
  });

  it('maps every composition NFC makes to its own characters, never to the whole text', () => {
    // Each character that NFC composes from two or more, written decomposed after a letter: the
    // segments must keep the marks (and Hangul's jamo) with the character they compose with.
    const parts: string[] = [];
    for (let cp = 0x80; cp <= 0x2ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const character = String.fromCodePoint(cp);
      const decomposed = character.normalize('NFD');
      if ([...decomposed].length > 1 && decomposed.normalize('NFC') === character)
        parts.push(`x${decomposed}`);
    }
    parts.push('\u1100\u1161\u11A8', '\u3131\u314F', '\u{16D63}\u{16D68}');
    expect(parts.length).toBeGreaterThan(10_000);
    const text = parts.join(' ');
    const { source, from, to } = mappedLexemeSource(text);
    expect(source).toBe(lexemeSource(text));
    const widest = Math.max(...source.split('').map((_, i) => to![i] - from![i]));
    expect(widest).toBeLessThan(10);
  });
});
