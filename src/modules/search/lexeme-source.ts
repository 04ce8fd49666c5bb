// Imports nothing: migration 9 runs this same function over the chunks earlier versions indexed.

/**
 * The text a chunk's or a query's BM25 lexemes are taken from: its words as a reader reads them.
 * PostgreSQL's text search parser compares code points, so one word written two ways was two terms,
 * and a query matched only the passages typed the way it was:
 * - canonical forms: `é` as one character and as `e` with a combining accent (NFD, as macOS and some
 *   converters write it) become one, by NFC;
 * - compatibility forms of letters and digits: ligatures (`ﬁ`), full-width (`Ｔ`, `１`), half-width
 *   kana, mathematical alphanumerics, the micro sign (`µ`, read as Greek `μ`), become what they stand
 *   for, by NFKC applied to those characters alone;
 * - a soft hyphen (U+00AD), an invisible hint where a word may break, is dropped: the parser ended a
 *   word there.
 *
 * Everything else stays as written, above all what NFKC would glue to a word as letters or digits:
 * superscripts and subscripts (`results¹`, `CO₂`, `xⁿ`, `1ª`), which the parser splits off as it does
 * `™`, `½` or circled letters. (Session 22's whole-text NFKC turned `results¹` into the term
 * `results1` and `Acme™` into `acmetm`.) The chunk's content itself is stored and shown as written.
 */
export function lexemeSource(text: string): string {
  if (!BEYOND_ASCII.test(text)) return text;
  let source = text.normalize('NFC');
  if (source.includes(SOFT_HYPHEN)) source = source.replaceAll(SOFT_HYPHEN, '');
  if (source.normalize('NFKC') === source) return source;
  const { pattern, replacements } = (compatibility ??= compatibilityLetters());
  return source.replace(pattern, (letter) => replacements.get(letter)!).normalize('NFC');
}

const BEYOND_ASCII = /[\u0080-\u{10FFFF}]/u;
const SOFT_HYPHEN = '\u00AD';

const LETTER_OR_DIGIT = /^[\p{L}\p{Nd}]$/u;
const MODIFIER_OR_OTHER_LETTER = /^[\p{Lm}\p{Lo}]$/u;
const CASED_LETTER = /[\p{Lu}\p{Ll}\p{Lt}]/u;

let compatibility: { pattern: RegExp; replacements: Map<string, string> } | undefined;

/**
 * Every letter and decimal digit whose compatibility form differs from its canonical one, with that
 * form, and one pattern that finds them: about 2,300 characters, listed from the runtime's own Unicode
 * data (the ICU that `String.prototype.normalize` uses) on first need, in about 65 ms. Left out: the
 * superscript and subscript letters, which are modifier or other letters (`ʰ`, `ⁿ`, `ª`) whose
 * compatibility form is a cased letter; a modifier letter such as the half-width voiced mark `ﾞ`, whose
 * form is a combining mark, is kept in.
 */
function compatibilityLetters(): { pattern: RegExp; replacements: Map<string, string> } {
  const replacements = new Map<string, string>();
  let ranges = '';
  let start = -1;
  let end = -1;
  const close = () => {
    if (start < 0) return;
    ranges += start === end ? codePoint(start) : `${codePoint(start)}-${codePoint(end)}`;
  };
  for (let cp = 0x80; cp <= 0x10ffff; cp++) {
    if (cp === 0xd800) cp = 0xe000; // surrogates are no characters
    const character = String.fromCodePoint(cp);
    if (!LETTER_OR_DIGIT.test(character)) continue;
    const compatible = character.normalize('NFKC');
    if (compatible === character.normalize('NFC')) continue;
    if (MODIFIER_OR_OTHER_LETTER.test(character) && CASED_LETTER.test(compatible)) continue;
    replacements.set(character, compatible);
    if (cp !== end + 1) {
      close();
      start = cp;
    }
    end = cp;
  }
  close();
  return { pattern: new RegExp(`[${ranges}]`, 'gu'), replacements };
}

const codePoint = (cp: number) => `\\u{${cp.toString(16)}}`;
