// Imports nothing of the project: migration 9 runs this same function over the chunks it indexes again.
import { createHash } from 'node:crypto';

/**
 * The text a chunk's or a query's BM25 lexemes are taken from: its words as a reader reads them.
 * PostgreSQL's text search parser compares code points, so one word written two ways was two terms,
 * and a query matched only the passages typed the way it was:
 * - canonical forms: `é` as one character and as `e` with a combining accent (NFD, as macOS and some
 *   converters write it) become one, by NFC;
 * - compatibility forms of letters and digits: ligatures (`ﬁ`), full-width (`Ｔ`, `１`), half-width
 *   kana, mathematical alphanumerics, the micro sign (`µ`, read as Greek `μ`), become what they stand
 *   for, by NFKC applied to those characters alone; so does full-width punctuation (`３．１４` is
 *   `3.14`, a number, not `3` and `14`);
 * - invisible characters that only say where a word may or may not break, never that it ends (soft
 *   hyphen, word joiner, zero-width no-break space), or which glyph to draw (variation selectors), are
 *   dropped: the parser ended a word at them.
 *
 * - text of the scripts written without spaces between words (Han, Hiragana and Katakana together;
 *   Thai; Lao; Khmer; Myanmar) is cut into overlapping pairs of characters, each a term
 *   (`cutUnspaced`): the parser took a whole run of them up to the next space or sign as one word.
 *
 * Everything else stays as written, above all what NFKC would glue to a word as letters or digits:
 * superscript and subscript digits (`results¹`, `CO₂`) and symbols (`Acme™`, `½`), which the parser
 * splits off their word (NFKC of the whole text would make `results¹` the term `results1` and `Acme™`
 * the term `acmetm`). Superscript and subscript letters (`resultsᵃ`, `xⁿ`, `1ª`) stay too;
 * the parser reads those as part of their word. A letter whose compatibility form
 * holds a space or a sign (`ŀ`, the spacing Arabic vowel marks, `ﷺ`) stays, so no word is split.
 * The chunk's content itself is stored and shown as written.
 */
export function lexemeSource(text: string): string {
  if (!BEYOND_ASCII.test(text)) return text;
  const composed = text.normalize('NFC');
  const mapped = replaceCompatible(composed);
  // A letter mapped, or a soft hyphen dropped, can leave a base letter beside a combining mark.
  return cutUnspaced(mapped === composed ? composed : mapped.normalize('NFC'));
}

/**
 * `text`'s lexeme source where it differs from `text`, else null: what indexing sends beside a chunk's
 * content (nearly every chunk is its own lexeme source, and only the others are sent twice).
 */
export function changedLexemeSource(text: string): string | null {
  const source = lexemeSource(text);
  return source === text ? null : source;
}

const BEYOND_ASCII = /[\u0080-\u{10FFFF}]/u;

/**
 * `lexemeSource(text)` with, for each of its UTF-16 units, the range of `text` it was read from
 * (`from[i]` to `to[i]`), so that a term found in the source can be shown in the text as written.
 * Null ranges: the source is the text itself. A unit inserted by the cut (a space) has an empty range.
 */
export interface MappedLexemeSource {
  source: string;
  from: number[] | null;
  to: number[] | null;
}

/**
 * `lexemeSource`, mapped back to `text`: the text is normalised a segment at a time (a character with
 * the marks it composes with), each segment's units mapped to the whole segment unless it is unchanged,
 * then cut as `cutUnspaced` cuts it. The source is checked against `lexemeSource`'s own; should a
 * segment ever normalise otherwise alone than in its text, the whole text is one segment.
 */
export function mappedLexemeSource(text: string): MappedLexemeSource {
  const expected = lexemeSource(text);
  if (expected === text) return { source: text, from: null, to: null };
  let normalized = normalizeBySegment(text);
  const whole = wholeNormalized(text);
  if (normalized.text !== whole) {
    normalized = {
      text: whole,
      from: Array<number>(whole.length).fill(0),
      to: Array<number>(whole.length).fill(text.length),
    };
  }
  const cut = mappedCut(normalized);
  if (cut.source !== expected) {
    return {
      source: expected,
      from: Array<number>(expected.length).fill(0),
      to: Array<number>(expected.length).fill(text.length),
    };
  }
  return cut;
}

/** What `lexemeSource` gives before the cut: NFC, the table's replacements, NFC again. */
function wholeNormalized(text: string): string {
  const composed = text.normalize('NFC');
  const mapped = replaceCompatible(composed);
  return mapped === composed ? composed : mapped.normalize('NFC');
}

interface Mapped {
  text: string;
  from: number[];
  to: number[];
}

function normalizeBySegment(text: string): Mapped {
  let out = '';
  const from: number[] = [];
  const to: number[] = [];
  let start = 0;
  const flush = (end: number) => {
    if (end === start) return;
    const unit = text.charCodeAt(start);
    // Below U+0300 every character is its own NFC; only the table's few (the soft hyphen, µ) change.
    const piece = end - start === 1 && unit < 0x300 && BASIC[unit] === 0 ? null : text.slice(start, end);
    const normal = piece === null ? null : wholeNormalized(piece);
    if (piece === null || normal === piece) {
      out += piece ?? text[start];
      for (let k = start; k < end; k++) {
        from.push(k);
        to.push(k + 1);
      }
    } else {
      out += normal;
      for (let k = 0; k < normal!.length; k++) {
        from.push(start);
        to.push(end);
      }
    }
  };
  for (let i = 0; i < text.length;) {
    const cp = text.codePointAt(i)!;
    if (i > 0 && startsSegment(cp)) {
      flush(i);
      start = i;
    }
    i += cp > 0xffff ? 2 : 1;
  }
  flush(text.length);
  return { text: out, from, to };
}

/** Hangul's medial vowels and final consonants, which NFC composes with the syllable before them. */
function conjoiningJamo(cp: number): boolean {
  return (cp >= 0x1160 && cp <= 0x11ff) || (cp >= 0xd7b0 && cp <= 0xd7ff);
}
const COMBINING_MARK = /^\p{M}/u;

/** Code points up to the end of the second plane that cannot start a segment; built at first use. */
let notStarting: Uint8Array | null = null;

/**
 * Whether a character starts a segment that normalises alone as in its text: nothing NFC would compose
 * with what precedes it (a mark, a Hangul jamo, any character that ends a composition, as Kirat Rai's
 * vowel signs, which are letters), nor a character the table drops or turns into one.
 */
function startsSegment(cp: number): boolean {
  if (cp < 0x300) return cp !== 0xad;
  if (cp >= notStartingSize) return !COMBINING_MARK.test(String.fromCodePoint(cp)) && !ASTRAL.has(cp);
  notStarting ??= notStartingTable();
  return notStarting[cp] === 0;
}

const notStartingSize = 0x20000;

function notStartingTable(): Uint8Array {
  const table = new Uint8Array(notStartingSize);
  // Every character a canonical composition takes after its first, from the runtime's own data.
  for (let c = 0xc0; c < 0x30000; c++) {
    if (c === 0xd800) c = 0xe000;
    const character = String.fromCodePoint(c);
    const decomposed = [...character.normalize('NFD')];
    if (decomposed.length < 2 || decomposed.join('').normalize('NFC') !== character) continue;
    for (const part of decomposed.slice(1)) {
      const code = part.codePointAt(0)!;
      if (code < notStartingSize) table[code] = 1;
    }
  }
  const composesBackwards = (code: number | undefined) =>
    code === undefined ||
    (code < notStartingSize && table[code] === 1) ||
    COMBINING_MARK.test(String.fromCodePoint(code)) ||
    conjoiningJamo(code);
  for (let c = 0x300; c < notStartingSize; c++) {
    if (c === 0xd800) c = 0xe000;
    if (table[c] === 1) continue;
    const character = String.fromCodePoint(c);
    const replacement = c > 0xffff ? ASTRAL.get(c) : BASIC[c] ? REPLACEMENTS[BASIC[c] - 1] : undefined;
    const first = (replacement ?? character).normalize('NFD').codePointAt(0);
    if (composesBackwards(c) || composesBackwards(first)) table[c] = 1;
  }
  return table;
}

/** `cutUnspaced`, each unit of its output mapped as the unit it copies (an inserted space: empty). */
function mappedCut({ text, from, to }: Mapped): MappedLexemeSource {
  if (!MAYBE_UNSPACED.test(text)) return { source: text, from, to };
  let out = '';
  const outFrom: number[] = [];
  const outTo: number[] = [];
  const copy = (start: number, end: number) => {
    out += text.slice(start, end);
    for (let k = start; k < end; k++) {
      outFrom.push(from[k]);
      outTo.push(to[k]);
    }
  };
  const space = (at: number) => {
    out += ' ';
    const point = at < text.length ? from[at] : (to[text.length - 1] ?? 0);
    outFrom.push(point);
    outTo.push(point);
  };
  let copied = 0;
  let cut = false;
  forEachRun(text, (start, ends) => {
    cut = true;
    const end = ends[ends.length - 1];
    copy(copied, start);
    if (start > 0 && !SPACE.test(text[start - 1])) space(start);
    if (ends.length === 1) copy(start, end);
    else {
      copy(start, ends[1]);
      for (let u = 2; u < ends.length; u++) {
        space(ends[u - 1]);
        copy(ends[u - 2], ends[u]);
      }
    }
    if (end < text.length && !SPACE.test(text[end])) space(end);
    copied = end;
  });
  if (!cut) return { source: text, from, to };
  copy(copied, text.length);
  return { source: out, from: outFrom, to: outTo };
}

/**
 * The scripts written without spaces between words, a class each (0: none); a run of characters of one
 * class is cut into terms. Han, Hiragana and Katakana are one class, as Japanese mixes them within a
 * word (`東京に行く`, `ビール瓶`), with the prolonged sound mark `ー`, which is of no script.
 */
const UNSPACED_SCRIPTS = [
  /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u30fc]$/u,
  /^\p{Script=Thai}$/u,
  /^\p{Script=Lao}$/u,
  /^\p{Script=Khmer}$/u,
  /^\p{Script=Myanmar}$/u,
];
/** A combining mark, written with the character before it: part of its unit (Thai vowels, variation selectors). */
const MARK = 0xff;
/** Where unspaced text can start: the first code point of any class (Thai, U+0E01), for a fast test. */
const MAYBE_UNSPACED = /[\u0e00-\u{3ffff}]/u;

/**
 * Each code point's class (`UNSPACED_SCRIPTS` index + 1, `MARK`, or 0), up to the end of the third
 * plane, where the last ideographs are. Letters and letter numbers only (`〇`), so that the scripts'
 * digits, signs and punctuation (`。`, `๏`) still end a run as the parser would end a word.
 */
const UNSPACED = new Uint8Array(0x40000);
{
  const LETTER = /^[\p{L}\p{Nl}]$/u;
  const COMBINING = /^\p{M}$/u;
  for (let cp = 0x0e00; cp < UNSPACED.length; cp++) {
    if (cp === 0xd800) cp = 0xe000;
    const character = String.fromCodePoint(cp);
    if (COMBINING.test(character)) {
      UNSPACED[cp] = MARK;
      continue;
    }
    if (!LETTER.test(character) && cp !== 0x30fc) continue;
    const index = UNSPACED_SCRIPTS.findIndex((script) => script.test(character));
    if (index >= 0) UNSPACED[cp] = index + 1;
  }
}

/**
 * `text` with each run of unspaced characters (`UNSPACED`) replaced by its overlapping pairs of units,
 * a unit being a character with the combining marks after it: `東京都庁` becomes `東京 京都 都庁`, a
 * run of one or two units stays as it is. Pairs rather than a dictionary's words, by measurement (docs/search.md,
 * Text without spaces): they find a word whatever the dictionary, and give the same terms on every
 * runtime, which a segmenter's dictionary, changing with ICU, would not. The spaces around keep the
 * run apart from a Latin word or a sign it touches (`iPhone 発売`); a text cut already is its own cut.
 */
function cutUnspaced(text: string): string {
  if (!MAYBE_UNSPACED.test(text)) return text;
  let out = '';
  let copied = 0;
  forEachRun(text, (start, ends) => {
    const end = ends[ends.length - 1];
    const before = start > 0 && !SPACE.test(text[start - 1]) ? ' ' : '';
    const after = end < text.length && !SPACE.test(text[end]) ? ' ' : '';
    out += text.slice(copied, start) + before + pairs(text, start, ends) + after;
    copied = end;
  });
  return out === '' ? text : out + text.slice(copied);
}

/**
 * Calls `visit` for each run of unspaced characters of one class (`UNSPACED`), with where it starts
 * and where each of its units ends, a unit being a character with the combining marks after it:
 * what `cutUnspaced` and `mappedCut` cut alike. `ends` is reused from one run to the next.
 */
function forEachRun(text: string, visit: (start: number, ends: number[]) => void): void {
  const ends: number[] = [];
  let i = 0;
  while (i < text.length) {
    const cp = text.codePointAt(i)!;
    const kind = cp < UNSPACED.length ? UNSPACED[cp] : 0;
    if (kind === 0 || kind === MARK) {
      i += cp > 0xffff ? 2 : 1;
      continue;
    }
    const start = i;
    ends.length = 0;
    while (i < text.length) {
      const next = text.codePointAt(i)!;
      if ((next < UNSPACED.length ? UNSPACED[next] : 0) !== kind) break;
      let end = i + (next > 0xffff ? 2 : 1);
      while (end < text.length) {
        const mark = text.codePointAt(end)!;
        if ((mark < UNSPACED.length ? UNSPACED[mark] : 0) !== MARK) break;
        end += mark > 0xffff ? 2 : 1;
      }
      ends.push(end);
      i = end;
    }
    visit(start, ends);
  }
}

/** ASCII's white space: what the parser ends a word at under any locale. */
const SPACE = /[ \t\n\v\f\r]/;

/** The run's overlapping pairs of units (`forEachRun`), apart by spaces; a run of one unit is itself. */
function pairs(text: string, start: number, ends: number[]): string {
  if (ends.length === 1) return text.slice(start, ends[0]);
  let out = text.slice(start, ends[1]);
  for (let u = 2; u < ends.length; u++) out += ' ' + text.slice(ends[u - 2], ends[u]);
  return out;
}

/** `text` with each character of the table replaced: a typed-array lookup per UTF-16 unit beyond ASCII. */
function replaceCompatible(text: string): string {
  let out = '';
  let copied = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) continue;
    let replacement: string | undefined;
    let width = 1;
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        width = 2;
        replacement = ASTRAL.get((unit - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000);
      }
    } else if (BASIC[unit] !== 0) {
      replacement = REPLACEMENTS[BASIC[unit] - 1];
    }
    if (replacement !== undefined) {
      out += text.slice(copied, i) + replacement;
      copied = i + width;
    }
    i += width - 1;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

const LETTER_OR_DIGIT = /^[\p{L}\p{Nd}]$/u;
const MODIFIER_OR_OTHER_LETTER = /^[\p{Lm}\p{Lo}]$/u;
const CASED_LETTER = /[\p{Lu}\p{Ll}\p{Lt}]/u;
const LETTERS_MARKS_DIGITS = /^[\p{L}\p{M}\p{Nd}]+$/u;

/**
 * Dropped: they tell where a word may (soft hyphen) or may not (word joiner, zero-width no-break space)
 * break, or which glyph to draw (the variation selectors, standard and ideographic), nothing more.
 */
const INVISIBLE_IN_WORDS = [
  0x00ad,
  0x2060,
  0xfeff,
  ...Array.from({ length: 16 }, (_, i) => 0xfe00 + i),
  ...Array.from({ length: 240 }, (_, i) => 0xe0100 + i),
];
/** Full-width forms of ASCII's printable characters. */
const FULL_WIDTH_ASCII = { first: 0xff01, last: 0xff5e };

/**
 * The replacements: index + 1 into REPLACEMENTS per code unit of the basic plane (0: none), and a map
 * for the rest. Listed at load from the runtime's own Unicode data (the ICU behind
 * `String.prototype.normalize`): every letter and decimal digit whose compatibility form differs from
 * its canonical one and is made of letters, marks and digits alone, except superscript and subscript
 * letters (modifier or other letters whose form is a cased letter: `ʰ`, `ⁿ`, `ª`; a modifier such as
 * the half-width voiced mark `ﾞ`, whose form is a combining mark, is kept in). About 2,300 characters,
 * all in the first two planes: beyond them lie only ideographs, whose compatibility variants are
 * canonical ones, which NFC handles.
 */
const BASIC = new Uint16Array(0x10000);
const REPLACEMENTS: string[] = [];
const ASTRAL = new Map<number, string>();
{
  const add = (cp: number, replacement: string) => {
    if (cp > 0xffff) {
      ASTRAL.set(cp, replacement);
    } else {
      REPLACEMENTS.push(replacement);
      BASIC[cp] = REPLACEMENTS.length;
    }
  };
  for (let cp = 0x80; cp <= 0x1ffff; cp++) {
    if (cp === 0xd800) cp = 0xe000; // surrogates are no characters
    const character = String.fromCodePoint(cp);
    if (!LETTER_OR_DIGIT.test(character)) continue;
    const compatible = character.normalize('NFKC');
    if (compatible === character.normalize('NFC') || !LETTERS_MARKS_DIGITS.test(compatible)) continue;
    if (MODIFIER_OR_OTHER_LETTER.test(character) && CASED_LETTER.test(compatible)) continue;
    add(cp, compatible);
  }
  for (let cp = FULL_WIDTH_ASCII.first; cp <= FULL_WIDTH_ASCII.last; cp++) {
    if (BASIC[cp] === 0) add(cp, String.fromCharCode(cp - FULL_WIDTH_ASCII.first + 0x21));
  }
  for (const cp of INVISIBLE_IN_WORDS) add(cp, '');
}

/**
 * The digest of the table and the unspaced scripts' classes under the Unicode data the stored postings
 * were indexed with (Unicode 17.0, the ICU of the Node.js of .nvmrc). A runtime whose digest differs
 * would take other lexemes from the same text than the stored chunks hold, and its queries would miss
 * them: it must not index or search until a migration has indexed again the chunks whose text the
 * difference touches.
 */
export const INDEXED_LEXEME_TABLE = '2dde162c8e3f002d3704f577057bf47d2c8de6af2191643f6e0e060afe965e5d';

/** A digest of the replacement table and the unspaced scripts' classes, in code point order. */
export function lexemeTableDigest(): string {
  const hash = createHash('sha256');
  for (let cp = 0; cp < BASIC.length; cp++) {
    if (BASIC[cp] !== 0) hash.update(`${cp}:${REPLACEMENTS[BASIC[cp] - 1]}\n`);
  }
  for (const [cp, replacement] of [...ASTRAL].sort(([a], [b]) => a - b))
    hash.update(`${cp}:${replacement}\n`);
  hash.update(UNSPACED);
  return hash.digest('hex');
}

/** Throws when this runtime's table is not the one the index was built with (`INDEXED_LEXEME_TABLE`). */
export function checkLexemeTable(): void {
  const digest = lexemeTableDigest();
  if (digest !== INDEXED_LEXEME_TABLE) {
    throw new Error(
      `This runtime's Unicode data (ICU ${process.versions.icu}, Unicode ${process.versions.unicode}) maps ` +
        `characters for keyword search otherwise than the stored index (table ${digest.slice(0, 12)}, ` +
        `index ${INDEXED_LEXEME_TABLE.slice(0, 12)}): run the Node.js of .nvmrc, or another with its ICU ` +
        `(docs/search.md, Unicode forms)`,
    );
  }
}
