import { lexemeSource } from 'src/modules/search/lexeme-source.js';

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
    ['half-width kana with their voiced mark', 'ｶﾞｲﾄﾞ', 'ガイド'],
    ['a full-width letter before a combining accent', 'Ｅ\u0301', 'É'],
    ['a soft hyphen inside a word', 'infor\u00ADmation', 'information'],
  ])('reads %s as the letters it stands for', (_, text, expected) => {
    expect(lexemeSource(text)).toBe(expected);
  });

  it.each([
    ['footnote markers', 'results¹ and findings²'],
    ['subscripts', 'CO₂ and H₂O'],
    ['superscript and subscript letters', 'xⁿ, tʰ, aᵢ, 1ª'],
    ['symbols of letters', 'Acme™ ℠ ℃ Ⓐ ㎏'],
    ['vulgar fractions and Roman numerals', '½ Ⅻ'],
    ['full-width punctuation', '東京（とうきょう）、日本。'],
  ])('keeps %s as written, never glued to a word as letters or digits', (_, text) => {
    expect(lexemeSource(text)).toBe(text);
  });

  it('changes only what it must in text that mixes both', () => {
    expect(lexemeSource('The ﬁrst result¹ of Ｔｅａｍ™')).toBe('The first result¹ of Team™');
  });

  it('is idempotent and gives NFC text for every letter and digit beyond ASCII', () => {
    const characters: string[] = [];
    for (let cp = 0x80; cp <= 0x2ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const character = String.fromCodePoint(cp);
      if (/^[\p{L}\p{Nd}]$/u.test(character)) characters.push(character);
    }
    const text = characters.join(' ');
    const source = lexemeSource(text);
    expect(source.normalize('NFC')).toBe(source);
    expect(lexemeSource(source)).toBe(source);
  });
});
