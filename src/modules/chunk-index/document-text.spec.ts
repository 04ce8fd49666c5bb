import { SECTION_SEPARATOR, chunkText } from 'src/modules/embeddings/chunking/chunker.js';
import { pageLength, spanText, type TextChunk, textFrom } from 'src/modules/chunk-index/document-text.js';

const words = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `word${from + i}`).join(' ');
/** Short sentences, which the chunker repeats at the start of the next chunk (its overlap). */
const sentences = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => `Sentence ${from + i} is short.`).join(' ');

/** The chunks the chunker makes of `sections`, as the database keeps them. */
function chunksOf(sections: string[]): TextChunk[] {
  const counter = { count: (text: string) => text.split(/\s+/).filter(Boolean).length };
  return chunkText(
    { format: 'prose', sections: sections.map((text, i) => ({ text, page: i + 1 })) },
    counter,
    { maxTokens: 40, overlapTokens: 8 },
  );
}

describe('textFrom', () => {
  const paragraphs = [words(30), sentences(20), words(50, 55)].join('\n\n');
  const chunks = chunksOf([paragraphs, words(35, 200)]);
  const full = [paragraphs, words(35, 200)].join(SECTION_SEPARATOR);

  it('rebuilds the whole text from overlapping chunks, without repeating the overlaps', () => {
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.some((c, i) => i > 0 && c.charStart < chunks[i - 1].charEnd)).toBe(true);
    const whole = textFrom(chunks, 0, 1_000_000);
    expect(whole).toEqual({ text: full, end: full.length, truncated: false });
  });

  it('pages through the text: each page starts where the last ended, and together they are the whole', () => {
    let text = '';
    let from = 0;
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(100);
      const page = textFrom(chunks, from, 97);
      expect(page.text.length).toBeLessThanOrEqual(97);
      expect(full.slice(from, page.end)).toBe(page.text);
      text += page.text;
      from = page.end;
      if (!page.truncated) break;
    }
    expect(text).toBe(full);
  });

  it('stands a blank line for the space between chunks that do not touch', () => {
    const apart: TextChunk[] = [
      { content: 'First part.', charStart: 0, charEnd: 11 },
      { content: 'Second part.', charStart: 16, charEnd: 28 },
    ];
    expect(textFrom(apart, 0, 100)).toEqual({
      text: 'First part.\n\nSecond part.',
      end: 28,
      truncated: false,
    });
    expect(textFrom(apart, 13, 100).text).toBe('Second part.');
  });

  it('never splits a surrogate pair at the end of a page', () => {
    const emoji: TextChunk[] = [{ content: 'ab😀cd', charStart: 0, charEnd: 6 }];
    expect(textFrom(emoji, 0, 3)).toEqual({ text: 'ab', end: 2, truncated: true });
    expect(textFrom(emoji, 2, 3)).toEqual({ text: '😀c', end: 5, truncated: true });
    // A page of one character still moves on: it takes the whole pair.
    expect(textFrom(emoji, 2, 1)).toEqual({ text: '😀', end: 4, truncated: true });
  });

  it('gives nothing past the end', () => {
    expect(textFrom(chunks, full.length, 100)).toEqual({ text: '', end: full.length, truncated: false });
  });
});

describe('spanText', () => {
  const paragraphs = [words(30), sentences(20), words(50, 55)].join('\n\n');
  const sections = [paragraphs, words(35, 200)];
  const chunks = chunksOf(sections);
  const full = sections.join(SECTION_SEPARATOR);

  it('rebuilds the text position for position, each chunk at its offsets', () => {
    const whole = spanText(chunks, 0, full.length);
    expect(whole).toBe(full);
    for (const chunk of chunks) expect(whole.slice(chunk.charStart, chunk.charEnd)).toBe(chunk.content);
  });

  it('gives spans that join into the whole, wherever they start and end', () => {
    let text = '';
    for (let from = 0; from < full.length; from += 37)
      text += spanText(chunks, from, Math.min(from + 37, full.length));
    expect(text).toBe(full);
  });

  it('stands blank characters of the same length for the space between chunks', () => {
    const apart: TextChunk[] = [
      { content: 'First part.', charStart: 0, charEnd: 11 },
      { content: 'Second part.', charStart: 16, charEnd: 28 },
      { content: 'Third.', charStart: 29, charEnd: 35 },
    ];
    const whole = spanText(apart, 0, 35);
    expect(whole).toBe('First part.   \n\nSecond part. Third.');
    expect(spanText(apart, 13, 20)).toBe(whole.slice(13, 20));
    expect(spanText(apart, 2, 29) + spanText(apart, 29, 35)).toBe(whole.slice(2));
  });
});

describe('pageLength', () => {
  it('never ends a page inside a surrogate pair, and always moves on', () => {
    expect(pageLength('ab😀cd', 3)).toBe(2);
    expect(pageLength('ab😀cd', 4)).toBe(4);
    expect(pageLength('😀c', 1)).toBe(2);
    expect(pageLength('abc', 10)).toBe(3);
  });
});
