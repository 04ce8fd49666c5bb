import { Injectable } from '@nestjs/common';
import { LexemesRepository, type ParsedText } from 'src/modules/chunk-index/lexemes.repository.js';
import { lexemeSource, mappedLexemeSource } from 'src/modules/chunk-index/lexeme-source.js';
import type { HighlightDto, SearchResultDto } from 'src/modules/search/dto/search.dto.js';
import { SearchReads } from 'src/modules/search/search-reads.js';

/** Token types whose token is followed by its parts (`ts_token_type`): a URL, hyphenated words. */
const COMPOUNDS = new Set([5, 15, 16, 17]);
/** PostgreSQL's longest word (`MAXSTRLEN`, in bytes): a longer one is skipped and takes no position. */
const LONGEST_WORD_BYTES = 2047;
/** Positions past this are all recorded as it (`MAXENTRYPOS - 1`): they tell no token apart. */
const LAST_POSITION = 16383;

/** A token of a text's lexeme source: where it lies there, its position (0: none) and its key. */
interface Token {
  start: number;
  end: number;
  position: number;
  key: string;
}

/**
 * The spans of each result's `content` that hold a term of its query, with the keyword leg's lexemes:
 * the dataset's configuration over the lexeme sources of the query and of the content, so that a
 * stemmed word (`running` for `run`) and a pair of Chinese characters are found as the index finds
 * them, and stop words are not (docs/search.md, Highlights).
 */
@Injectable()
export class Highlights {
  constructor(
    private readonly lexemes: LexemesRepository,
    private readonly reads: SearchReads,
  ) {}

  /** Sets `highlights` on every result of every answer: one statement for all of them. */
  async add(
    language: string,
    answers: { query: string; results: SearchResultDto[] }[],
    deadline?: AbortSignal,
  ): Promise<void> {
    const contents = new Map<string, number>();
    const pairs: { query: number; text: number }[] = [];
    answers.forEach(({ results }, query) => {
      for (const result of results) {
        let text = contents.get(result.content);
        if (text === undefined) contents.set(result.content, (text = contents.size));
        pairs.push({ query, text });
      }
    });
    if (pairs.length === 0) return;
    const sources = [...contents.keys()].map(mappedLexemeSource);
    const matched = await this.lexemes.matchedPositions(
      this.reads.statements(deadline),
      language,
      answers.map(({ query }) => lexemeSource(query)),
      sources.map(({ source }) => source),
      pairs,
    );
    const mapped = new Set(matched.mapped);
    const tokens = sources.map(({ source }, i) => tokensOf(source, matched.texts[i], mapped));
    let pair = 0;
    for (const { results } of answers) {
      for (const result of results) {
        const { text } = pairs[pair];
        result.highlights = spans(tokens[text], matched.positions[pair++], sources[text]);
      }
    }
  }
}

/**
 * Where each token lies in `source`, the position `to_tsvector` gave it, and its type and text: a
 * token's lexemes depend on those alone. A compound (a URL, a hyphenated word) is followed by its
 * parts, which spell it out; any other token starts where the one before ended. Null when the tokens
 * do not spell the source out (never seen; the text then has no highlights rather than wrong ones).
 */
export function tokensOf(source: string, parsed: ParsedText, mapped: Set<number>): Token[] | null {
  const tokens: Token[] = [];
  // The parser counts code points; the source is indexed in UTF-16 units.
  const basicPlane = !BEYOND_BMP.test(source);
  const advance = (from: number, codePoints: number) => {
    if (basicPlane) return from + codePoints;
    let at = from;
    for (let k = 0; k < codePoints && at < source.length; k++) at += source.codePointAt(at)! > 0xffff ? 2 : 1;
    return at;
  };
  let cursor = 0;
  let partAt = 0;
  let partEnd = 0;
  let position = 0;
  for (let i = 0; i < parsed.types.length; i++) {
    const type = parsed.types[i];
    let start: number;
    let end: number;
    if (partAt < partEnd) {
      start = partAt;
      end = partAt = advance(partAt, parsed.lengths[i]);
      if (end > partEnd) return null;
    } else {
      start = cursor;
      end = cursor = advance(cursor, parsed.lengths[i]);
      partAt = start;
      partEnd = COMPOUNDS.has(type) ? end : start;
    }
    const text = source.slice(start, end);
    const counted = mapped.has(type) && (text.length < 512 || Buffer.byteLength(text) < LONGEST_WORD_BYTES);
    if (counted) position++;
    tokens.push({ start, end, position: counted ? position : 0, key: `${type} ${text}` });
  }
  return cursor === source.length ? tokens : null;
}

const BEYOND_BMP = /[\u{10000}-\u{10FFFF}]/u;

/**
 * The spans of the content whose tokens hold a matched lexeme, sorted, touching ones merged. A token
 * is matched when its type and text are those of a token at a matched position: so are its
 * repetitions past the positions a tsvector keeps (255 a lexeme, none past 16,383).
 */
export function spans(
  tokens: Token[] | null,
  positions: number[],
  { from, to }: { from: number[] | null; to: number[] | null },
): HighlightDto[] {
  if (tokens === null || positions.length === 0) return [];
  const at = new Set(positions.filter((position) => position < LAST_POSITION));
  const keys = new Set(tokens.filter((token) => at.has(token.position)).map((token) => token.key));
  const found = tokens
    .filter((token) => token.position > 0 && keys.has(token.key) && token.end > token.start)
    .map((token) =>
      from && to
        ? { start: from[token.start], end: to[token.end - 1] }
        : { start: token.start, end: token.end },
    )
    .sort((a, b) => a.start - b.start || a.end - b.end);
  const merged: HighlightDto[] = [];
  for (const span of found) {
    const last = merged.at(-1);
    if (last && span.start <= last.end) last.end = Math.max(last.end, span.end);
    else merged.push({ ...span });
  }
  return merged;
}
