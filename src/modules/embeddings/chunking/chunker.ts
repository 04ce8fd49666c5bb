import type { ExtractedText, TextFormat } from 'src/common/text/extracted-text.js';

/** Counts tokens the way the embedding model will. */
export interface Tokenizer {
  count(text: string): number;
}

/** For providers without a local tokenizer: about three characters a token, which over-counts English. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3);
}

const ESTIMATING_TOKENIZER: Tokenizer = { count: estimateTokens };

/**
 * `chunkText` by the estimate, on the calling thread: cheap, where counting with a model's tokenizer
 * costs far more (docs/ingestion.md).
 */
export function chunkByEstimate(extracted: ExtractedText, options: ChunkingOptions): Promise<Chunk[]> {
  return Promise.resolve(chunkText(extracted, ESTIMATING_TOKENIZER, options));
}

export interface ChunkingOptions {
  /** Target size of a chunk. */
  maxTokens: number;
  /** Tokens of the previous chunk repeated at the start of the next, so that no sentence loses its context. */
  overlapTokens: number;
}

export interface Chunk {
  content: string;
  tokenCount: number;
  /** Page or slide number, when the document has them. */
  page?: number;
  /** Offsets in the document's extracted text (its sections joined by a blank line). */
  charStart: number;
  charEnd: number;
}

/** A span of the full text that the chunker keeps whole when it can. */
interface Unit {
  start: number;
  end: number;
  tokens: number;
  /** A heading or a top-level definition: a chunk should start here. */
  boundary: boolean;
}

export const SECTION_SEPARATOR = '\n\n';

/**
 * Characters a chunk may hold per token of its budget, whatever the tokenizer says. A run WordPiece
 * cannot break into words it knows (base64, a hash, a minified line) is one [UNK] token however long it
 * is, so a token budget alone let a 400 KB line through as one chunk. Ten is generous: BERT's WordPiece
 * reads SciFact's abstracts at a median of 4.4 characters a token and code at 3.5, and no chunk of
 * SciFact, the test fixtures or this repository's source came above 7, so the bound only bites on text
 * the model cannot read anyway (or on very sparse text, whose chunks are then merely shorter).
 */
export const MAX_CHARS_PER_TOKEN = 10;

/** The longest chunk, in characters, for a budget of `maxTokens`. */
export function maxChunkChars(maxTokens: number): number {
  return maxTokens * MAX_CHARS_PER_TOKEN;
}

/**
 * Characters given to the sentence segmenter at a time. V8's `Intl.Segmenter` gives every segment a
 * fresh copy of the whole string segmented (its `input`), so spreading the segments of a whole paragraph
 * took time and memory in the square of its length. Windows keep both linear. Most paragraphs fit in one, segmented exactly as before,
 * and a sentence longer than a window is read on into the next (see `sentences`).
 */
const SENTENCE_WINDOW = 4096;
/** Characters of a window read again by the next when one sentence filled it (see `sentences`). */
const SENTENCE_LOOKAHEAD = 256;

/**
 * A character that shows, as `isVisibleText` (src/common/validation) has it; repeated here because this
 * file imports nothing at run time (its heap test runs it alone, in a process of its own).
 */
const VISIBLE = /[^\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2800\uFFFC]/u;
const HEADING = /^#{1,6}\s/;
const DEFINITION =
  /^(?:export\s+|public\s+|private\s+|protected\s+|static\s+|async\s+)*(?:def|class|function|func|fn|interface|struct|impl|module|sub)\b/;
const sentenceSegmenter = new Intl.Segmenter('en', { granularity: 'sentence' });

/**
 * Cuts a document's text into chunks of at most `maxTokens` tokens. It prefers the document's own
 * structure: sections (pages, slides) are never mixed, headings and top-level code definitions start a
 * chunk, paragraphs (records, for data files) are kept whole, then sentences; only a run with no break
 * at all (a 400 KB base64 line) is cut by length. No chunk is longer than `maxChunkChars(maxTokens)`
 * characters, and time and memory grow linearly with the text. Each chunk records where it came from.
 */
export function chunkText(extracted: ExtractedText, tokenizer: Tokenizer, options: ChunkingOptions): Chunk[] {
  const chunks: Chunk[] = [];
  let offset = 0;
  const full = extracted.sections.map((s) => s.text).join(SECTION_SEPARATOR);
  for (const section of extracted.sections) {
    const packer = new Packer(full, tokenizer, options);
    const sectionEnd = offset + section.text.length;
    splitUnits(full, offset, sectionEnd, extracted.format, tokenizer, options.maxTokens, packer);
    for (const chunk of packer.finish()) chunks.push({ ...chunk, page: section.page });
    offset += section.text.length + SECTION_SEPARATOR.length;
  }
  return chunks;
}

/**
 * Hands the units of text[start, end) to the packer one by one, which keeps only those of the chunk it
 * is filling. (Pushed rather than pulled through generators: resuming one for every unit and sentence
 * made chunking SciFact measurably slower.)
 */
function splitUnits(
  text: string,
  start: number,
  end: number,
  format: TextFormat,
  tokenizer: Tokenizer,
  maxTokens: number,
  packer: Packer,
): void {
  const maxChars = maxChunkChars(maxTokens);
  const blocks =
    format === 'records'
      ? matches(text, start, end, /[^\n]+/g)
      : matches(text, start, end, /\S[\s\S]*?(?=\n[ \t]*\n|$)/g);
  for (const [blockStart, blockEnd] of blocks) {
    const block = text.slice(blockStart, blockEnd);
    // Zero-width spaces and the like alone: nothing to read, and a chunk of them alone matches nothing.
    if (!VISIBLE.test(block)) continue;
    const boundary =
      format === 'markdown' ? HEADING.test(block) : format === 'code' ? DEFINITION.test(block) : false;
    // A block over the character bound is split whatever its count, so it need not be tokenized whole.
    if (block.length <= maxChars) {
      const tokens = tokenizer.count(block);
      if (tokens <= maxTokens) {
        packer.add({ start: blockStart, end: blockEnd, tokens, boundary });
        continue;
      }
    }
    let first = true;
    const piece = (pieceStart: number, pieceEnd: number) => {
      for (const unit of splitByLength(text, pieceStart, pieceEnd, tokenizer, maxTokens, maxChars)) {
        packer.add({ ...unit, boundary: boundary && first && unit.start === pieceStart });
      }
      first = false;
    };
    if (format === 'code' || format === 'records') {
      for (const [lineStart, lineEnd] of matches(text, blockStart, blockEnd, /[^\n]+/g))
        piece(lineStart, lineEnd);
    } else {
      sentences(text, blockStart, blockEnd, piece);
    }
  }
}

/** Spans of `pattern` (a global regular expression) within text[start, end), trailing white space cut. */
function* matches(text: string, start: number, end: number, pattern: RegExp): Generator<[number, number]> {
  const slice = text.slice(start, end);
  for (const m of slice.matchAll(pattern)) {
    const spanStart = start + m.index;
    const spanEnd = trimmedEnd(text, spanStart, spanStart + m[0].length);
    if (spanEnd > spanStart) yield [spanStart, spanEnd];
  }
}

/**
 * Hands each sentence of text[start, end), trailing white space cut, to `each`, finding them window by
 * window (see `SENTENCE_WINDOW`). A window's last sentence may run on past it, so the next window starts
 * at that sentence rather than after it; a sentence longer than a window is read on through as many as
 * it takes.
 */
function sentences(
  text: string,
  start: number,
  end: number,
  each: (start: number, end: number) => void,
): void {
  let sentenceStart = start;
  let from = start;
  while (from < end) {
    const windowEnd = Math.min(end, from + SENTENCE_WINDOW);
    const spans: [number, number][] = [];
    for (const s of sentenceSegmenter.segment(text.slice(from, windowEnd))) {
      spans.push([from + s.index, from + s.index + s.segment.length]);
    }
    // The first segment goes on with a sentence begun in an earlier window, if any.
    spans[0][0] = sentenceStart;
    if (windowEnd < end && spans.length === 1) {
      // Read on from a little before the window's end: where the sentence ends there may depend on
      // characters the window did not reach.
      from = windowEnd - SENTENCE_LOOKAHEAD;
      continue;
    }
    if (windowEnd < end) {
      sentenceStart = from = spans[spans.length - 1][0];
      spans.pop();
    } else {
      from = end;
    }
    for (const [spanStart, spanEnd] of spans) {
      const trimmed = trimmedEnd(text, spanStart, spanEnd);
      if (trimmed > spanStart) each(spanStart, trimmed);
    }
  }
}

/** The end of text[start, end) without its trailing white space. */
function trimmedEnd(text: string, start: number, end: number): number {
  while (end > start && /\s/.test(text[end - 1])) end--;
  return end;
}

/**
 * Cuts a span that has no usable break into pieces within both bounds, preferring to cut at a space.
 * Only a bounded sample of the span is tokenized to size the pieces, which are then checked one by one.
 */
function splitByLength(
  text: string,
  start: number,
  end: number,
  tokenizer: Tokenizer,
  maxTokens: number,
  maxChars: number,
): Omit<Unit, 'boundary'>[] {
  const sampleEnd = Math.min(end, start + 4 * maxChars);
  const sampleTokens = tokenizer.count(text.slice(start, sampleEnd));
  if (sampleEnd === end && sampleTokens <= maxTokens && end - start <= maxChars) {
    return [{ start, end, tokens: sampleTokens }];
  }
  const pieces: Omit<Unit, 'boundary'>[] = [];
  // Aim a little under the limit, from the span's own characters-per-token ratio.
  let width = Math.min(
    maxChars,
    Math.max(1, Math.floor(((sampleEnd - start) * maxTokens * 0.9) / Math.max(1, sampleTokens))),
  );
  let position = start;
  while (position < end) {
    let cut = Math.min(end, position + width);
    if (cut < end) {
      // Searching the piece only, not back through the text before it, keeps a line without spaces linear.
      const space = text.slice(position, cut + 1).lastIndexOf(' ');
      if (space > width / 2) cut = position + space;
      // Never between the two halves of a surrogate pair (an emoji, say): a lone half is no character.
      if (isHighSurrogate(text.charCodeAt(cut - 1))) cut += cut - 1 > position ? -1 : 1;
    }
    const count = tokenizer.count(text.slice(position, cut));
    if (count > maxTokens && cut - position > 1) {
      width = Math.max(1, Math.floor(width * 0.7));
      continue;
    }
    pieces.push({ start: position, end: cut, tokens: count });
    position = cut;
    while (position < end && /\s/.test(text[position])) position++;
  }
  return pieces;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** Greedy packing of units into chunks, repeating the last units of a chunk at the start of the next. */
class Packer {
  private readonly chunks: Omit<Chunk, 'page'>[] = [];
  private current: Unit[] = [];
  private tokens = 0;
  private readonly maxChars: number;

  constructor(
    private readonly text: string,
    private readonly tokenizer: Tokenizer,
    private readonly options: ChunkingOptions,
  ) {
    this.maxChars = maxChunkChars(options.maxTokens);
  }

  add(unit: Unit): void {
    const { maxTokens, overlapTokens } = this.options;
    const full =
      this.current.length > 0 &&
      (unit.boundary ||
        this.tokens + 1 + unit.tokens > maxTokens ||
        unit.end - this.current[0].start > this.maxChars);
    if (full) {
      this.emit();
      this.current = unit.boundary
        ? []
        : overlap(this.current, overlapTokens, maxTokens - unit.tokens, unit.end - this.maxChars);
      this.tokens = this.current.reduce((sum, u) => sum + u.tokens + 1, 0);
    }
    this.current.push(unit);
    this.tokens += unit.tokens + (this.current.length > 1 ? 1 : 0);
  }

  finish(): Omit<Chunk, 'page'>[] {
    if (this.current.length > 0) this.emit();
    return this.chunks;
  }

  private emit(): void {
    const start = this.current[0].start;
    const end = this.current[this.current.length - 1].end;
    const content = this.text.slice(start, end);
    this.chunks.push({ content, tokenCount: this.tokenizer.count(content), charStart: start, charEnd: end });
  }
}

/**
 * The trailing units of a chunk that fit in the overlap budget and leave room for what follows: `room`
 * tokens, and a start no earlier than `earliestStart` so that the next chunk keeps to the character bound.
 */
function overlap(units: Unit[], overlapTokens: number, room: number, earliestStart: number): Unit[] {
  const kept: Unit[] = [];
  let tokens = 0;
  for (let i = units.length - 1; i > 0; i--) {
    if (tokens + units[i].tokens > Math.min(overlapTokens, room) || units[i].start < earliestStart) break;
    kept.unshift(units[i]);
    tokens += units[i].tokens + 1;
  }
  return kept;
}

/** A Markdown heading line's marks and text. */
const HEADING_LINE = /^(#{1,6})[ \t]+([^\r\n]*)/;
/** The line that opens or closes a fenced code block, whose `#` lines are code, not headings. */
const FENCE_LINE = /^(```|~~~)/;

/**
 * A Markdown text's headings, with where each starts: in one pass over its lines, outside fenced code,
 * a closing run of `#`s (after a space) cut from their text.
 */
function markdownHeadings(full: string): { index: number; level: number; text: string }[] {
  const headings: { index: number; level: number; text: string }[] = [];
  let fence: string | null = null;
  let index = 0;
  for (const line of full.split('\n')) {
    const marker = FENCE_LINE.exec(line)?.[1];
    if (fence !== null) {
      if (marker === fence && line.slice(3).trim() === '') fence = null;
    } else if (marker) {
      fence = marker;
    } else {
      const heading = HEADING_LINE.exec(line);
      if (heading) {
        let text = heading[2].trimEnd();
        let end = text.length;
        while (end > 0 && text[end - 1] === '#') end--;
        if (end < text.length && (end === 0 || text[end - 1] === ' ' || text[end - 1] === '\t'))
          text = text.slice(0, end).trimEnd();
        if (text !== '') headings.push({ index, level: heading[1].length, text });
      }
    }
    index += line.length + 1;
  }
  return headings;
}

/**
 * For each chunk (in document order), the headings of the Markdown sections it starts in, outermost
 * first: what a reader of the chunk alone would not see. A heading the chunk starts with is its own
 * text: it closes the sections of its level and deeper, and is not among them. Texts of other formats
 * have none.
 */
export function headingPaths(extracted: ExtractedText, chunks: Pick<Chunk, 'charStart'>[]): string[][] {
  if (extracted.format !== 'markdown') return chunks.map(() => []);
  const headings = markdownHeadings(extracted.sections.map((s) => s.text).join(SECTION_SEPARATOR));
  const open: { level: number; text: string }[] = [];
  const names = () => open.map(({ text }) => text);
  let next = 0;
  return chunks.map(({ charStart }) => {
    let path: string[] | null = null;
    for (; next < headings.length && headings[next].index <= charStart; next++) {
      const { level, text } = headings[next];
      while (open.length > 0 && open[open.length - 1].level >= level) open.pop();
      // A heading the chunk starts with: the chunk is in what it leaves open, not in what it opens.
      if (headings[next].index === charStart) path = names();
      open.push({ level, text });
    }
    return path ?? names();
  });
}
