import { chunkText, type Tokenizer } from 'src/modules/ingestion/chunking/chunker.js';
import type { ExtractedText } from 'src/modules/ingestion/extraction/extracted-text.js';

/** One token per word or punctuation mark: easy to reason about in assertions. */
const words: Tokenizer = { count: (text) => (text.match(/\w+|[^\w\s]/g) ?? []).length };
const options = { maxTokens: 20, overlapTokens: 6 };

const prose = (text: string, page?: number): ExtractedText => ({
  format: 'prose',
  sections: [{ text, page }],
});

describe('chunkText', () => {
  it('keeps a short text in one chunk with its offsets and page', () => {
    const chunks = chunkText(prose('One short paragraph.', 3), words, options);
    expect(chunks).toEqual([
      { content: 'One short paragraph.', tokenCount: 4, page: 3, charStart: 0, charEnd: 20 },
    ]);
  });

  it('never exceeds the token limit, and every chunk is the text at its offsets', () => {
    const text = Array.from(
      { length: 30 },
      (_, i) => `Sentence number ${i} says something about topic ${i % 4}.`,
    ).join(' ');
    const extracted = prose(`${text}\n\nA second paragraph follows here.`);
    const chunks = chunkText(extracted, words, options);
    expect(chunks.length).toBeGreaterThan(5);
    for (const chunk of chunks) {
      expect(chunk.tokenCount).toBeLessThanOrEqual(20);
      expect(extracted.sections[0].text.slice(chunk.charStart, chunk.charEnd)).toBe(chunk.content);
    }
  });

  it('repeats the end of a chunk at the start of the next', () => {
    const text = Array.from({ length: 8 }, (_, i) => `Short sentence ${i}.`).join(' ');
    const chunks = chunkText(prose(text), words, { maxTokens: 12, overlapTokens: 4 });
    expect(chunks.length).toBeGreaterThan(1);
    for (let i = 1; i < chunks.length; i++) expect(chunks[i].charStart).toBeLessThan(chunks[i - 1].charEnd);
  });

  it('cuts a line without any break into pieces that fit, losing nothing', () => {
    const line = 'QUJD'.repeat(500);
    const tokenizer: Tokenizer = { count: (text) => Math.ceil(text.length / 4) };
    const chunks = chunkText(prose(line), tokenizer, { maxTokens: 64, overlapTokens: 0 });
    expect(chunks.length).toBeGreaterThanOrEqual(8);
    expect(chunks.every((c) => c.tokenCount <= 64)).toBe(true);
    expect(chunks.map((c) => c.content).join('')).toBe(line);
  });

  it('starts a new chunk at each Markdown heading', () => {
    const text = '# Install\n\nRun the installer.\n\n# Configure\n\nEdit the file.';
    const chunks = chunkText({ format: 'markdown', sections: [{ text }] }, words, {
      maxTokens: 100,
      overlapTokens: 10,
    });
    expect(chunks.map((c) => c.content)).toEqual([
      '# Install\n\nRun the installer.',
      '# Configure\n\nEdit the file.',
    ]);
  });

  it('keeps pages apart and numbers them', () => {
    const extracted: ExtractedText = {
      format: 'prose',
      sections: [
        { text: 'Page one.', page: 1 },
        { text: 'Page two.', page: 2 },
      ],
    };
    const chunks = chunkText(extracted, words, options);
    expect(chunks.map((c) => [c.content, c.page, c.charStart])).toEqual([
      ['Page one.', 1, 0],
      ['Page two.', 2, 11],
    ]);
  });

  it('starts code chunks at top-level definitions', () => {
    const text = 'import os\n\ndef first():\n    return 1\n\ndef second():\n    return 2';
    const chunks = chunkText({ format: 'code', sections: [{ text }] }, words, {
      maxTokens: 100,
      overlapTokens: 10,
    });
    expect(chunks.map((c) => c.content)).toEqual([
      'import os',
      'def first():\n    return 1',
      'def second():\n    return 2',
    ]);
  });

  it('returns nothing for empty text', () => {
    expect(chunkText(prose('   \n\n  '), words, options)).toEqual([]);
  });
});
