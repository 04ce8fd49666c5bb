import {
  changedLexemeSource,
  checkLexemeTable,
  INDEXED_LEXEME_TABLE,
  lexemeSource,
  lexemeTableDigest,
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
