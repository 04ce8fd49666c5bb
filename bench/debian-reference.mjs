// The data of `bench:languages`: Debian's Debian Reference (packages debian-reference-zh-cn, -ja and
// -en, scripts/install-languages-data.sh) cut into its sections, and short names of places and
// currencies from Debian's iso-codes (in Chinese and Japanese its translations), which have nothing to do
// with the manual. Imports nothing of the project, so that it can be read without a build.
import { existsSync, readFileSync } from 'node:fs';

export const REFERENCE_DIR = process.env.BENCH_DEBIAN_REFERENCE ?? '/usr/share/debian-reference';

/** The book's pages in reading order: the preface, the 12 chapters and the appendix (index.*: contents only). */
const PAGES = ['pr01', ...Array.from({ length: 12 }, (_, i) => `ch${String(i + 1).padStart(2, '0')}`), 'apa'];

/** Elements whose text is no section's: navigation bars, tables of contents, a chapter's footnotes. */
const SKIPPED_CLASSES = new Set(['navheader', 'navfooter', 'toc', 'footnotes']);
const SKIPPED_TAGS = new Set(['head', 'script', 'style']);
/** Tags that end a line of text where they open or close. */
const BLOCKS = new Set([
  'p',
  'div',
  'pre',
  'li',
  'dt',
  'dd',
  'tr',
  'br',
  'hr',
  'table',
  'thead',
  'tbody',
  'ul',
  'ol',
  'dl',
  'blockquote',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
]);
/** Tags that end a cell: a table's cells are read one after the other on their row's line. */
const CELLS = new Set(['td', 'th']);
const VOID = new Set(['br', 'hr', 'img', 'col', 'meta', 'link', 'input']);

/** Characters written without spaces between them (CSS Text's segment-break rule for East Asian text). */
const EAST_ASIAN = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u3000-\u303f\u30fc\uff00-\uffef]/u;

/** The files of `lang` (`zh-cn`, `ja`, `en`), or the message that says how to install them. */
export function referenceFiles(lang) {
  const files = PAGES.map((page) => `${REFERENCE_DIR}/${page}.${lang}.html`);
  const missing = files.filter((file) => !existsSync(file));
  if (missing.length > 0) {
    throw new Error(
      `the Debian Reference (${lang}) is not installed: ${missing[0]} is missing; ` +
        'run `bash scripts/install-languages-data.sh` (as root: it installs Debian packages)',
    );
  }
  return files;
}

/**
 * The sections of the Debian Reference in `lang`, in reading order: each heading (h1 to h6) and the
 * text that follows it up to the next heading, of whatever level (so a section's text is its own, not
 * its subsections'). `{ id, page, level, heading, title, body }`: `id` is the heading's anchor (the
 * same in every translation), `heading` as printed, `title` without its number ("1.2.3.", "第1章",
 * "Chapter 1."), `body` the text as a browser lays it out, code blocks kept line by line.
 */
export function sections(lang) {
  const out = [];
  for (const file of referenceFiles(lang)) {
    const page = file.slice(file.lastIndexOf('/') + 1).split('.')[0];
    for (const section of pageSections(readFileSync(file, 'utf8'))) {
      out.push({ ...section, page, id: section.anchor ?? `${page}#${out.length}` });
    }
  }
  const ids = new Set();
  for (const section of out) {
    if (ids.has(section.id)) section.id = `${section.page}#${section.id}#${out.indexOf(section)}`;
    ids.add(section.id);
  }
  return out;
}

/** One page's sections (see `sections`). */
export function pageSections(html) {
  const found = [];
  let current = null; // the section being read
  let heading = null; // the heading being read: { level, anchor, text }
  let skip = null; // { tag, depth } of an element left out
  let pre = 0;
  let text = '';
  // Text laid out as a browser collapses spaces: none at a line's start or end, one between words.
  const emit = (piece) => {
    if (heading) heading.text += piece;
    else if (!current) return;
    else if (pre > 0) current.raw += piece;
    else if (piece === '\n') {
      let end = current.raw.length;
      while (current.raw[end - 1] === ' ') end--;
      current.raw = current.raw.slice(0, end) + piece;
    } else if (piece.startsWith(' ') && [undefined, ' ', '\n'].includes(current.raw.at(-1))) {
      current.raw += piece.slice(1);
    } else current.raw += piece;
  };
  const flush = () => {
    if (text) emit(pre > 0 ? text : text.replace(/[ \t\r\n]+/g, ' '));
    text = '';
  };
  for (const [token] of html.matchAll(/<!--[\s\S]*?-->|<[^>]*>|[^<]+/g)) {
    if (token.startsWith('<!--')) continue;
    if (!token.startsWith('<')) {
      if (!skip) text += pre > 0 ? decode(token) : decode(joinSegmentBreaks(token));
      continue;
    }
    const closing = token.startsWith('</');
    const tag = /^<\/?([a-zA-Z0-9]+)/.exec(token)?.[1]?.toLowerCase();
    if (!tag) continue; // <?xml ...?>, <!DOCTYPE ...>
    const selfClosing = token.endsWith('/>') || VOID.has(tag);
    if (skip) {
      if (tag === skip.tag && !selfClosing) skip.depth += closing ? -1 : 1;
      if (skip.depth === 0) skip = null;
      continue;
    }
    if (!closing && !selfClosing) {
      const classes = /\bclass="([^"]*)"/.exec(token)?.[1].split(/\s+/) ?? [];
      if (SKIPPED_TAGS.has(tag) || classes.some((name) => SKIPPED_CLASSES.has(name))) {
        flush();
        skip = { tag, depth: 1 };
        continue;
      }
    }
    const level = /^h([1-6])$/.exec(tag)?.[1];
    if (level && !closing) {
      flush();
      heading = { level: Number(level), anchor: null, text: '' };
      continue;
    }
    if (level && closing && heading) {
      flush();
      current = finishHeading(heading);
      found.push(current);
      heading = null;
      continue;
    }
    if (heading && tag === 'a' && !closing) {
      heading.anchor ??= /\bid="([^"]+)"/.exec(token)?.[1] ?? null;
    }
    if (tag === 'img') {
      continue; // its alt text ("[注記]") is an icon's
    }
    if (BLOCKS.has(tag) || CELLS.has(tag)) {
      flush();
      if (tag === 'pre') pre += closing ? -1 : 1;
      if (BLOCKS.has(tag)) emit('\n');
      else if (closing) emit(' ');
    }
  }
  flush();
  return found.map(({ raw, ...section }) => ({ ...section, body: tidy(raw) }));
}

function finishHeading({ level, anchor, text }) {
  const printed = text.replace(/\s+/g, ' ').trim();
  return { level, anchor, heading: printed, title: withoutNumber(printed), raw: '' };
}

/**
 * A heading without its number: "1.2.3. ", "A.1. ", "第1章 ", "第 1 章 ", "付録A ", "附录 A. ", "Chapter 1. ",
 * "Appendix A. ".
 */
export function withoutNumber(heading) {
  return heading
    .replace(/^(?:[A-Z]\.)?(?:\d+\.)+\s*/, '')
    .replace(/^(?:第\s*\d+\s*章|付録\s*[A-Z]\.?|附录\s*[A-Z]\.?|Chapter\s+\d+\.|Appendix\s+[A-Z]\.)\s*/, '')
    .trim();
}

/**
 * Line breaks of the HTML source as a browser lays them out: removed between two East Asian
 * characters (CSS Text 3, segment break transformation), a space elsewhere (collapsed later).
 */
function joinSegmentBreaks(text) {
  return text.replace(/(.)[ \t]*\r?\n[ \t]*(?=(.))/gu, (match, before, after) =>
    EAST_ASIAN.test(before) && EAST_ASIAN.test(after) ? before : `${before} `,
  );
}

function decode(text) {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (entity, name) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : Number(name.slice(1));
      return String.fromCodePoint(code);
    }
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' }[name.toLowerCase()] ?? entity;
  });
}

/** Lines trimmed of the spaces laid out around blocks, no more than one empty line in a row. */
function tidy(raw) {
  return raw
    .split('\n')
    .map((line) => line.replace(/^ +| +$/g, ''))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

const HAN_KANA = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}]/gu;

/** How many Han, Hiragana and Katakana characters `text` holds. */
export function hanKanaCount(text) {
  return text.match(HAN_KANA)?.length ?? 0;
}

/**
 * The known items of `lang`'s sections: the documents (sections whose body has at least `minBody`
 * characters) and the queries (the titles of those documents that hold at least `minHanKana` Han or
 * kana characters, or for English at least one word of two letters, and that no other section of
 * the book has: a title two sections share has no one right answer). In reading order: deterministic.
 */
export function knownItems(lang, { minBody = 100, minHanKana = 2 } = {}) {
  const all = sections(lang);
  const titleCounts = new Map();
  for (const section of all) {
    const key = section.title.normalize('NFKC').toLowerCase();
    titleCounts.set(key, (titleCounts.get(key) ?? 0) + 1);
  }
  const documents = all.filter((section) => [...section.body].length >= minBody);
  const english = lang === 'en';
  const queries = documents
    .filter((section) =>
      english ? /\p{L}{2}/u.test(section.title) : hanKanaCount(section.title) >= minHanKana,
    )
    .filter((section) => titleCounts.get(section.title.normalize('NFKC').toLowerCase()) === 1)
    .map((section) => ({ query: section.title, id: section.id }));
  const repeated = [...titleCounts.values()].filter((count) => count > 1).length;
  return { sections: all, documents, queries, repeated_titles: repeated };
}

/** The messages of a gettext catalogue (.mo): translations by original, the header (empty original) left out. */
export function readMo(path) {
  const data = readFileSync(path);
  const magic = data.readUInt32LE(0);
  const read =
    magic === 0x950412de
      ? (offset) => data.readUInt32LE(offset)
      : magic === 0xde120495
        ? (offset) => data.readUInt32BE(offset)
        : null;
  if (!read) throw new Error(`${path} is not a gettext catalogue`);
  const count = read(8);
  const originals = read(12);
  const translations = read(16);
  const string = (table, i) => {
    const length = read(table + i * 8);
    const offset = read(table + i * 8 + 4);
    return data.toString('utf8', offset, offset + length);
  };
  const messages = new Map();
  for (let i = 0; i < count; i++) {
    const original = string(originals, i);
    if (original) messages.set(original, string(translations, i));
  }
  return messages;
}

/** Where Debian's iso-codes keeps its translations of `lang`; English is their originals (of the Japanese). */
const LOCALE = { 'zh-cn': 'zh_CN', ja: 'ja', en: 'ja' };
export const ISO_CODES_DIR = process.env.BENCH_ISO_CODES_LOCALE ?? '/usr/share/locale';

/**
 * Off-topic queries in `lang`: the names of the world's regions and provinces (ISO 3166-2) and of
 * currencies (ISO 4217) as Debian's iso-codes translates them (for English, as it writes them), with
 * at least two Han or kana characters (English: a word of two letters), and none written as such
 * in any of `avoid` (the corpus's texts): places and money, which a manual of a Linux system has
 * nothing to say about. `count` of them, drawn by `shuffle` with `uniform` (deterministic); with the
 * size of the pool and how many of the names drawn were left out as written in the corpus.
 */
export function offTopicNames(lang, { count, uniform, shuffle, avoid }) {
  const english = lang === 'en';
  const names = new Set();
  for (const domain of ['iso_3166-2', 'iso_4217']) {
    const path = `${ISO_CODES_DIR}/${LOCALE[lang]}/LC_MESSAGES/${domain}.mo`;
    if (!existsSync(path)) {
      throw new Error(
        `${path} is missing: run \`bash scripts/install-languages-data.sh\` (package iso-codes)`,
      );
    }
    for (const [original, translation] of readMo(path)) {
      const name = (english ? original : translation).trim();
      const wanted = english ? /\p{L}{2}/u.test(name) : hanKanaCount(name) >= 2;
      if (wanted && name.length <= 40) names.add(name);
    }
  }
  const fold = (text) => text.normalize('NFKC').toLowerCase();
  const corpus = fold(avoid.join('\n'));
  const drawn = [];
  let present = 0;
  for (const name of shuffle([...names].sort(), uniform)) {
    if (drawn.length === count) break;
    if (corpus.includes(fold(name))) present++;
    else drawn.push(name);
  }
  return { queries: drawn, pool: names.size, left_out_as_present: present };
}
