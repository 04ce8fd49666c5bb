import { Injectable } from '@nestjs/common';
import type { Read } from 'src/database/read.js';

/**
 * A text's tokens by the configuration's parser, in its order: each token's type (`ts_token_type`) and
 * length in code points. The tokens themselves are not sent: they are slices of the text.
 */
export interface ParsedText {
  types: Uint16Array;
  lengths: Uint32Array;
}

/** What `matchedPositions` finds: each text's tokens, and each pair's matched positions. */
export interface MatchedPositions {
  /** The token types the configuration maps to dictionaries: only those take a position. */
  mapped: number[];
  texts: ParsedText[];
  /** Per pair, in the pairs' order: the positions (1 first) of the text's lexemes that are the query's. */
  positions: number[][];
}

/**
 * Parses texts as the keyword leg indexes them (`to_tsvector` with the dataset's configuration, over
 * their lexeme sources), to show which of their words a query matched.
 */
@Injectable()
export class LexemesRepository {
  /**
   * For each pair (a query and a text, as indexes into `queries` and `texts`), the positions in the
   * text's `to_tsvector` of the lexemes the query's `to_tsvector` holds; and each text's tokens by the
   * same parser, which the positions count (one statement for all of them, each text parsed once).
   */
  async matchedPositions(
    read: Read,
    language: string,
    queries: string[],
    texts: string[],
    pairs: { query: number; text: number }[],
  ): Promise<MatchedPositions> {
    // A union of three row kinds rather than three statements: one round trip for a whole batch.
    // A union of three row kinds rather than three statements: one round trip for a whole batch. The
    // tokens come packed (6 bytes each), cheaper to build and read than arrays of text.
    const rows = await read<{
      kind: 'mapped' | 'text' | 'pair';
      n: number;
      types: number[] | null;
      tokens: Buffer | null;
      positions: number[] | null;
    }>(
      `WITH q AS MATERIALIZED (SELECT n::int, tsvector_to_array(to_tsvector($1::regconfig, s)) AS terms
                    FROM unnest($2::text[]) WITH ORDINALITY AS q(s, n)),
            c AS MATERIALIZED (SELECT n::int, s, to_tsvector($1::regconfig, s) AS lexemes
                                 FROM unnest($3::text[]) WITH ORDINALITY AS c(s, n)),
            p AS (SELECT n::int, query, text FROM unnest($4::int[], $5::int[]) WITH ORDINALITY AS p(query, text, n))
       SELECT 'mapped' AS kind, 0 AS n,
              ARRAY(SELECT DISTINCT maptokentype FROM pg_ts_config_map WHERE mapcfg = $1::regconfig) AS types,
              NULL::bytea AS tokens, NULL::int[] AS positions
       UNION ALL
       SELECT 'text', c.n, NULL,
              (SELECT string_agg(int2send(x.tokid::int2) || int4send(length(x.token)), ''::bytea ORDER BY x.ord)
                 FROM ts_parse((SELECT cfgparser FROM pg_ts_config WHERE oid = $1::regconfig), c.s)
                      WITH ORDINALITY AS x(tokid, token, ord)),
              NULL
         FROM c
       UNION ALL
       SELECT 'pair', p.n, NULL, NULL,
              ARRAY(SELECT DISTINCT pos::int FROM unnest(c.lexemes) l, unnest(l.positions) pos
                     WHERE l.lexeme = ANY(q.terms))
         FROM p JOIN c ON c.n = p.text + 1 JOIN q ON q.n = p.query + 1`,
      [language, queries, texts, pairs.map((pair) => pair.query), pairs.map((pair) => pair.text)],
    );
    const empty: ParsedText = { types: new Uint16Array(0), lengths: new Uint32Array(0) };
    const result: MatchedPositions = {
      mapped: [],
      texts: texts.map(() => empty),
      positions: pairs.map(() => []),
    };
    for (const row of rows) {
      if (row.kind === 'mapped') result.mapped = row.types ?? [];
      else if (row.kind === 'text') result.texts[row.n - 1] = row.tokens ? unpackTokens(row.tokens) : empty;
      else result.positions[row.n - 1] = row.positions ?? [];
    }
    return result;
  }
}

/** Reads `int2send(type) || int4send(length)`, repeated. */
function unpackTokens(packed: Buffer): ParsedText {
  const count = packed.length / 6;
  const types = new Uint16Array(count);
  const lengths = new Uint32Array(count);
  for (let i = 0, at = 0; i < count; i++, at += 6) {
    types[i] = packed.readUInt16BE(at);
    lengths[i] = packed.readUInt32BE(at + 2);
  }
  return { types, lengths };
}
