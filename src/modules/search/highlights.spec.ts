import { mappedLexemeSource } from 'src/modules/chunk-index/lexeme-source.js';
import { spans, tokensOf } from 'src/modules/search/highlights.js';

/** Tokens as `ts_parse` gives them: [type, text] (1 asciiword, 12 blank, 16 asciihword, 11 its part). */
function parsed(tokens: [number, string][]) {
  return {
    types: Uint16Array.from(tokens.map(([type]) => type)),
    lengths: Uint32Array.from(tokens.map(([, text]) => [...text].length)),
  };
}
const MAPPED = new Set([1, 2, 11, 16]);
const IDENTITY = { from: null, to: null };

describe('tokensOf', () => {
  it("places a compound's parts inside it and counts positions as to_tsvector does", () => {
    const source = 'a well-being day';
    const tokens = tokensOf(
      source,
      parsed([
        [1, 'a'],
        [12, ' '],
        [16, 'well-being'],
        [11, 'well'],
        [12, '-'],
        [11, 'being'],
        [12, ' '],
        [1, 'day'],
      ]),
      MAPPED,
    )!;
    expect(tokens.map((t) => [source.slice(t.start, t.end), t.position])).toEqual([
      ['a', 1],
      [' ', 0],
      ['well-being', 2],
      ['well', 3],
      ['-', 0],
      ['being', 4],
      [' ', 0],
      ['day', 5],
    ]);
  });

  it('counts lengths in code points, as PostgreSQL does, over UTF-16 text', () => {
    const source = '𝐁𝐨𝐥𝐝er x';
    const tokens = tokensOf(
      source,
      parsed([
        [2, '𝐁𝐨𝐥𝐝er'],
        [12, ' '],
        [1, 'x'],
      ]),
      MAPPED,
    )!;
    expect(tokens.map((t) => source.slice(t.start, t.end))).toEqual(['𝐁𝐨𝐥𝐝er', ' ', 'x']);
  });

  it('gives up on tokens that do not spell the text out', () => {
    expect(tokensOf('abc', parsed([[1, 'ab']]), MAPPED)).toBeNull();
  });
});

describe('spans', () => {
  const source = 'run, ran, run again';
  const tokens = tokensOf(
    source,
    parsed([
      [1, 'run'],
      [12, ', '],
      [1, 'ran'],
      [12, ', '],
      [1, 'run'],
      [12, ' '],
      [1, 'again'],
    ]),
    MAPPED,
  );

  it('highlights the tokens at the matched positions and their repetitions', () => {
    // Position 1 alone is matched: its repetition at 3 (as past a tsvector's 255) is found by its text.
    expect(spans(tokens, [1], IDENTITY)).toEqual([
      { start: 0, end: 3 },
      { start: 10, end: 13 },
    ]);
    expect(spans(tokens, [], IDENTITY)).toEqual([]);
    expect(spans(null, [1], IDENTITY)).toEqual([]);
  });

  it('merges spans that overlap or touch, and maps them back to the content', () => {
    const content = '检索引擎';
    const mapped = mappedLexemeSource(content);
    expect(mapped.source).toBe('检索 索引 引擎');
    const pairs = tokensOf(
      mapped.source,
      parsed([
        [2, '检索'],
        [12, ' '],
        [2, '索引'],
        [12, ' '],
        [2, '引擎'],
      ]),
      new Set([2]),
    );
    expect(spans(pairs, [1, 2], mapped)).toEqual([{ start: 0, end: 3 }]);
    expect(spans(pairs, [1, 3], mapped)).toEqual([{ start: 0, end: 4 }]);
  });
});
