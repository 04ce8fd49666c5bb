/** A chunk as the text of its document is rebuilt from it: its content and where it lies in the text. */
export interface TextChunk {
  content: string;
  /** Offsets in the document's extracted text, in UTF-16 code units (see `Chunk` in the chunker). */
  charStart: number;
  charEnd: number;
}

/** A stretch of a document's text, and where it ends in the whole. */
export interface TextStretch {
  text: string;
  /** The offset in the document's text just after the stretch: where the next one starts. */
  end: number;
  /** Whether the stretch stopped at `maxCharacters` rather than at the last chunk given. */
  truncated: boolean;
}

/**
 * What stands for the space between two chunks that do not touch, which the chunker left out: only
 * blank space, a space where one character was (between words cut apart) and a blank line for more
 * (paragraph and section breaks, blocks with nothing visible).
 */
function gap(length: number): string {
  return length === 1 ? ' ' : '\n\n';
}

/**
 * The document's text from offset `from`, at most `maxCharacters` long, rebuilt from its chunks in
 * order. The chunks overlap (each repeats the end of the one before), so each adds only what lies past
 * the text so far. The text is stored once this way, as the chunks search reads, rather than a second
 * time whole.
 */
export function textFrom(chunks: readonly TextChunk[], from: number, maxCharacters: number): TextStretch {
  let text = '';
  let cursor = from;
  for (const chunk of chunks) {
    if (chunk.charEnd <= cursor) continue;
    if (chunk.charStart > cursor) {
      if (text.length > 0) {
        const blank = gap(chunk.charStart - cursor);
        if (text.length + blank.length >= maxCharacters) return { text, end: cursor, truncated: true };
        text += blank;
      }
      cursor = chunk.charStart;
    }
    const piece = chunk.content.slice(cursor - chunk.charStart);
    const room = maxCharacters - text.length;
    if (piece.length > room) {
      const taken = piece.slice(0, keepsPairs(piece, room));
      return { text: text + taken, end: cursor + taken.length, truncated: true };
    }
    text += piece;
    cursor = chunk.charEnd;
  }
  return { text, end: cursor, truncated: false };
}

/**
 * `length`, or one less where cutting there would split a surrogate pair; but never nothing, so that
 * paging always moves on (a page of one character takes a whole pair).
 */
function keepsPairs(text: string, length: number): number {
  const code = text.charCodeAt(length - 1);
  if (!(code >= 0xd800 && code <= 0xdbff)) return length;
  return length > 1 ? length - 1 : length + 1;
}

/**
 * What stands, in `spanText`, for a gap of `length` characters between two chunks: as many
 * characters, so that offsets stay those of the extracted text; a space for one, else spaces ending in
 * a blank line (the gaps are blank space, mostly between paragraphs, pages and slides).
 */
function paddedGap(length: number): string {
  return length === 1 ? ' ' : ' '.repeat(length - 2) + '\n\n';
}

/**
 * The document's text between offsets `from` and `to`, rebuilt from its chunks in order, position for
 * position: each character at its offset in the extracted text, the blank space the chunker left out
 * as blank characters of the same length (`paddedGap`). So a chunk's content is the text between its
 * `charStart` and `charEnd`, and spans that meet join into the whole. `chunks` must hold those that
 * overlap the span and, when `from` lies in a gap, the one before it (which says where the gap starts).
 */
export function spanText(chunks: readonly TextChunk[], from: number, to: number): string {
  let text = '';
  let cursor = from;
  /** Where the text the chunks seen so far cover ends: the start of the gap the cursor may be in. */
  let covered = 0;
  for (const chunk of chunks) {
    if (cursor >= to) break;
    if (chunk.charEnd <= cursor) {
      covered = Math.max(covered, chunk.charEnd);
      continue;
    }
    if (chunk.charStart > cursor) {
      const gapEnd = Math.min(chunk.charStart, to);
      text += paddedGap(chunk.charStart - covered).slice(cursor - covered, gapEnd - covered);
      cursor = gapEnd;
      if (cursor >= to) break;
    }
    const end = Math.min(chunk.charEnd, to);
    text += chunk.content.slice(cursor - chunk.charStart, end - chunk.charStart);
    cursor = end;
    covered = chunk.charEnd;
  }
  return cursor < to ? text + ' '.repeat(to - cursor) : text;
}

/**
 * How much of `text` a page of `wanted` characters takes: `wanted`, or one less where cutting there
 * would split a surrogate pair; a page of one character takes the whole pair, so that paging moves on.
 * `text` is read one character past the page, where there is one, to see the pair.
 */
export function pageLength(text: string, wanted: number): number {
  if (wanted >= text.length || !isHighSurrogate(text.charCodeAt(wanted - 1)))
    return Math.min(wanted, text.length);
  return wanted > 1 ? wanted - 1 : wanted + 1;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
