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
