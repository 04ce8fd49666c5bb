import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ExtractedText } from 'src/common/text/extracted-text.js';
import {
  chunkText,
  headingPaths,
  maxChunkChars,
  type Tokenizer,
} from 'src/modules/embeddings/chunking/chunker.js';
import ts from 'typescript';

const FIXTURES = '../shared/fixtures';

/** One token per word or punctuation mark: easy to reason about in assertions. */
const words: Tokenizer = { count: (text) => (text.match(/\w+|[^\w\s]/g) ?? []).length };
const options = { maxTokens: 20, overlapTokens: 6 };

const prose = (text: string, page?: number): ExtractedText => ({
  format: 'prose',
  sections: [{ text, page }],
});

/** Prose of one section per page, numbered from 1. */
const pages = (...texts: string[]): ExtractedText => ({
  format: 'prose',
  sections: texts.map((text, i) => ({ text, page: i + 1 })),
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
    const chunks = chunkText(pages('Page one.', 'Page two.'), words, options);
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

  it('makes no chunk of a page or a paragraph of invisible characters alone', () => {
    const extracted = pages(
      'Page one.\n\n\u200b\u200c\n\n\u3164\u3164',
      '\u200b\u2060\ufeff\n\n\u2800\ufffc\u034f\ufe0f',
      'Page three.',
    );
    const chunks = chunkText(extracted, words, options);
    expect(chunks.map((c) => [c.content, c.page])).toEqual([
      ['Page one.', 1],
      ['Page three.', 3],
    ]);
  });

  it('finds the same sentences in a paragraph longer than the segmenter reads at once', () => {
    const sentences = Array.from({ length: 600 }, (_, i) => `Sentence ${i} is about topic ${i % 9}.`);
    const text = sentences.join(' ');
    expect(text.length).toBeGreaterThan(3 * 4096);
    const chunks = chunkText(prose(text), words, { maxTokens: 12, overlapTokens: 0 });
    expect(chunks.map((c) => c.content)).toEqual(sentences);
  });

  it('cuts a line the tokenizer counts as a few tokens at the character bound (base64-single-line.txt)', () => {
    // WordPiece reads a run it has no words for as one [UNK]; `words` counts a run of letters as one too.
    const text = readFileSync(`${FIXTURES}/txt/base64-single-line.txt`, 'utf8');
    const bounds = { maxTokens: 256, overlapTokens: 32 };
    const chunks = chunkText(prose(text), words, bounds);
    expect(chunks.length).toBeGreaterThanOrEqual(text.length / maxChunkChars(256));
    let rebuilt = '';
    for (const chunk of chunks) {
      expect(chunk.content.length).toBeLessThanOrEqual(maxChunkChars(256));
      expect(chunk.tokenCount).toBeLessThanOrEqual(256);
      expect(text.slice(chunk.charStart, chunk.charEnd)).toBe(chunk.content);
      expect(chunk.charStart).toBeLessThanOrEqual(rebuilt.length);
      rebuilt += chunk.content.slice(rebuilt.length - chunk.charStart);
    }
    expect(rebuilt).toBe(text);
  });

  it('keeps to the character bound between words when the tokenizer counts next to nothing', () => {
    const text = Array.from({ length: 3000 }, (_, i) => `word${i % 97}`).join(' ');
    const chunks = chunkText(prose(text), { count: () => 1 }, { maxTokens: 20, overlapTokens: 6 });
    expect(chunks.length).toBeGreaterThanOrEqual(text.length / maxChunkChars(20));
    for (const chunk of chunks) {
      expect(chunk.content.length).toBeLessThanOrEqual(maxChunkChars(20));
      expect(chunk.content).toMatch(/^word\d+( word\d+)*$/);
      expect(text.slice(chunk.charStart, chunk.charEnd)).toBe(chunk.content);
    }
  });

  it('never cuts a run without breaks between the two halves of a surrogate pair', () => {
    const text = `x${'😀'.repeat(3000)}`;
    const chunks = chunkText(prose(text), { count: () => 1 }, { maxTokens: 256, overlapTokens: 0 });
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.content).not.toMatch(
        /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/,
      );
    }
    expect(chunks.map((c) => c.content).join('')).toBe(text);
  });

  describe('on a text of 1,000,000 characters in one paragraph', () => {
    // In a child process with a heap of its own: a chunker whose memory grows faster than the text
    // then dies there of "heap out of memory" (the old one needed gigabytes) instead of taking Jest down.
    const HEAP_MB = 256;
    let dir: string;
    let compiled: string;

    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'chunker-spec-'));
      compiled = join(dir, 'chunker.mjs');
      const source = readFileSync(new URL('./chunker.ts', import.meta.url), 'utf8');
      const compilerOptions = { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 };
      writeFileSync(compiled, ts.transpileModule(source, { compilerOptions }).outputText);
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    /** Chunks `make(i)` repeated to a million characters, reporting the peak growth of the heap. */
    const chunkMillion = (make: string) => {
      const script = `
        const { chunkText } = await import(${JSON.stringify(pathToFileURL(compiled).href)});
        let text = '';
        for (let i = 0; text.length < 1_000_000; i++) text += (${make})(i);
        text = text.slice(0, 1_000_000);
        const base = process.memoryUsage().heapUsed;
        let peak = base;
        let calls = 0;
        const words = { count(t) {
          if (++calls % 100 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed);
          return (t.match(/\\w+|[^\\w\\s]/g) ?? []).length;
        } };
        const chunks = chunkText({ format: 'prose', sections: [{ text }] }, words, { maxTokens: 256, overlapTokens: 32 });
        let gapless = chunks[0].charStart === 0;
        for (let i = 1; i < chunks.length; i++) gapless &&= chunks[i].charStart <= chunks[i - 1].charEnd + 1;
        console.log(JSON.stringify({
          chunks: chunks.length,
          maxTokens: Math.max(...chunks.map((c) => c.tokenCount)),
          maxChars: Math.max(...chunks.map((c) => c.content.length)),
          end: chunks[chunks.length - 1].charEnd,
          gapless,
          heapGrowthMb: Math.round((peak - base) / 1e6),
        }));`;
      const child = spawnSync(
        process.execPath,
        [`--max-old-space-size=${HEAP_MB}`, '--input-type=module', '-e', script],
        { encoding: 'utf8', timeout: 120_000 },
      );
      const outcome = { status: child.status, signal: child.signal, stderr: child.stderr.slice(0, 300) };
      expect(outcome).toEqual({ status: 0, signal: null, stderr: '' });
      return JSON.parse(child.stdout) as {
        chunks: number;
        maxTokens: number;
        maxChars: number;
        end: number;
        gapless: boolean;
        heapGrowthMb: number;
      };
    };

    it.each([
      [
        'prose',
        '(i) => `Sentence ${i} says something about topic ${i % 7}, and a few more words follow it. `',
      ],
      ['short lines without a blank line', "() => 'abc def ghi\\n'"],
    ])(
      'chunks %s within a bounded heap',
      (_name, make) => {
        const result = chunkMillion(make);
        expect(result.gapless).toBe(true);
        expect(result.end).toBeGreaterThan(999_990);
        expect(result.maxTokens).toBeLessThanOrEqual(256);
        expect(result.maxChars).toBeLessThanOrEqual(maxChunkChars(256));
        expect(result.heapGrowthMb).toBeLessThan(100);
      },
      150_000,
    );
  });
});

describe('headingPaths', () => {
  const markdown = (text: string): ExtractedText => ({ format: 'markdown', sections: [{ text }] });
  const text = [
    '# Guide', // 0
    'Intro.',
    '## Install',
    'Run it.',
    '### Linux ###',
    'apt install.',
    '## Use',
    'Search.',
  ].join('\n');
  const at = (line: string) => ({ charStart: text.indexOf(line) });

  it('gives each chunk the headings of the sections it starts in, outermost first, not its own first line', () => {
    expect(
      headingPaths(markdown(text), [
        at('# Guide'),
        at('Run it.'),
        at('apt install.'),
        at('## Use'),
        at('Search.'),
      ]),
    ).toEqual([[], ['Guide', 'Install'], ['Guide', 'Install', 'Linux'], ['Guide'], ['Guide', 'Use']]);
  });

  it('reads neither `#` lines of fenced code nor a closing `#` that is part of the text as headings', () => {
    const code = [
      '# Setup',
      '```sh',
      '# not a heading',
      'make',
      '```',
      'Then run it.',
      '## C#',
      'Notes.',
    ].join('\n');
    const from = (line: string) => ({ charStart: code.indexOf(line) });
    expect(headingPaths(markdown(code), [from('Then run it.'), from('Notes.')])).toEqual([
      ['Setup'],
      ['Setup', 'C#'],
    ]);
  });

  it('finds none in text of another format', () => {
    expect(headingPaths({ format: 'prose', sections: [{ text }] }, [at('Search.')])).toEqual([[]]);
  });
});
