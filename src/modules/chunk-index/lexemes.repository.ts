import { Injectable } from '@nestjs/common';
import type { Read } from 'src/database/read.js';

/** A text's tokens by the configuration's parser, in its order, with their types (`ts_token_type`). */
export interface ParsedText {
  types: number[];
  tokens: string[];
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
    const rows = await read<{
      kind: 'mapped' | 'text' | 'pair';
      n: number;
      types: number[] | null;
      tokens: string[] | null;
      positions: number[] | null;
    }>(
      `WITH q AS (SELECT n::int, tsvector_to_array(to_tsvector($1::regconfig, s)) AS terms
                    FROM unnest($2::text[]) WITH ORDINALITY AS q(s, n)),
            c AS MATERIALIZED (SELECT n::int, s, to_tsvector($1::regconfig, s) AS lexemes
                                 FROM unnest($3::text[]) WITH ORDINALITY AS c(s, n)),
            p AS (SELECT n::int, query, text FROM unnest($4::int[], $5::int[]) WITH ORDINALITY AS p(query, text, n))
       SELECT 'mapped' AS kind, 0 AS n,
              ARRAY(SELECT DISTINCT maptokentype FROM pg_ts_config_map WHERE mapcfg = $1::regconfig) AS types,
              NULL::text[] AS tokens, NULL::int[] AS positions
       UNION ALL
       SELECT 'text', c.n, t.types, t.tokens, NULL
         FROM c CROSS JOIN LATERAL (
              SELECT array_agg(x.tokid ORDER BY x.ord) AS types, array_agg(x.token ORDER BY x.ord) AS tokens
                FROM ts_parse((SELECT cfgparser FROM pg_ts_config WHERE oid = $1::regconfig), c.s)
                     WITH ORDINALITY AS x(tokid, token, ord)) t
       UNION ALL
       SELECT 'pair', p.n, NULL, NULL,
              ARRAY(SELECT DISTINCT pos::int FROM unnest(c.lexemes) l, unnest(l.positions) pos
                     WHERE l.lexeme = ANY(q.terms))
         FROM p JOIN c ON c.n = p.text + 1 JOIN q ON q.n = p.query + 1`,
      [language, queries, texts, pairs.map((pair) => pair.query), pairs.map((pair) => pair.text)],
    );
    const result: MatchedPositions = {
      mapped: [],
      texts: texts.map(() => ({ types: [], tokens: [] })),
      positions: pairs.map(() => []),
    };
    for (const row of rows) {
      if (row.kind === 'mapped') result.mapped = row.types ?? [];
      else if (row.kind === 'text')
        result.texts[row.n - 1] = { types: row.types ?? [], tokens: row.tokens ?? [] };
      else result.positions[row.n - 1] = row.positions ?? [];
    }
    return result;
  }
}
