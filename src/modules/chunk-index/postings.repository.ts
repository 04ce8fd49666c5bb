import { Injectable } from '@nestjs/common';
import type { Read } from 'src/database/read.js';
import { lexemeSource } from 'src/modules/chunk-index/lexeme-source.js';

/** One term's postings in a dataset: for each chunk holding it, the chunk, the term's tf and the chunk's length. */
export interface Postings {
  chunks: Float64Array;
  tf: Uint32Array;
  length: Uint32Array;
}

/** Bytes per posting in the database's packed form and in memory: int8 chunk, int4 tf, int4 length. */
export const POSTING_BYTES = 16;

/** A query term, with the dataset's BM25 statistics. */
export interface QueryTerm {
  term: string;
  /**
   * Changes in the transaction that changes the term's postings: equal versions, equal postings. Null
   * when no chunk of the dataset holds the term.
   */
  version: string | null;
  /** The dataset's chunk count: BM25's N. */
  n: number;
  /** The dataset's total chunk length, the sum behind BM25's average chunk length. */
  total: number;
  /** The chunks ever removed from the dataset's index (`LegHit.removed`). */
  removed: string;
}

/** A term's postings with the version they were read at. */
export interface VersionedPostings {
  term: string;
  version: string;
  postings: Postings;
}

/**
 * The reads of BM25's postings and statistics, on the caller's connection (`Read`): a search reads
 * them within its own snapshot and deadline.
 */
@Injectable()
export class PostingsRepository {
  /**
   * The query's distinct terms (the lexemes of its `lexemeSource`, taken as a passage's are), in term
   * order, with their versions (null for those the dataset does not hold) and the dataset's statistics.
   */
  queryTerms(read: Read, datasetSeq: string, language: string, query: string): Promise<QueryTerm[]> {
    return read<QueryTerm>(
      `SELECT q.term, t.version::text AS version, i.chunk_count::float8 AS n, i.total_chunk_length::float8 AS total,
              i.chunks_removed::text AS removed
         FROM dataset_index i
        CROSS JOIN unnest(tsvector_to_array(to_tsvector($2::regconfig, $3))) AS q(term)
         LEFT JOIN term_stats t ON t.dataset_seq = i.dataset_seq AND t.term = q.term AND t.df > 0
        WHERE i.dataset_seq = $1
        ORDER BY q.term`,
      [datasetSeq, language, lexemeSource(query)],
    );
  }

  /** Terms' postings with their current versions; a term without postings is left out. */
  async postings(read: Read, datasetSeq: string, terms: string[]): Promise<VersionedPostings[]> {
    // Packed to 16 bytes a posting: far cheaper to send and read than a row per posting. Aggregated
    // before the versions are joined: joined first, the planner hashes all of term_stats and sorts
    // every posting on disk (docs/search.md).
    const rows = await read<{ term: string; version: string; packed: Buffer }>(
      `SELECT p.term, t.version::text AS version, p.packed
         FROM term_stats t
         JOIN (SELECT term, string_agg(int8send(chunk_seq) || int4send(tf) || int4send(length), ''::bytea) AS packed
                 FROM chunk_terms WHERE dataset_seq = $1 AND term = ANY($2::text[])
                GROUP BY term) p ON p.term = t.term
        WHERE t.dataset_seq = $1 AND t.term = ANY($2::text[])`,
      [datasetSeq, terms],
    );
    return rows.map(({ term, version, packed }) => ({ term, version, postings: unpackPostings(packed) }));
  }

  /**
   * The `limit` terms of all datasets held by the most chunks, most first: every term holds at least
   * one posting, so a budget of postings bounds the terms worth considering.
   */
  mostFrequentTerms(read: Read, limit: number): Promise<{ datasetSeq: string; term: string; df: number }[]> {
    return read(
      `SELECT dataset_seq::text AS "datasetSeq", term, df FROM term_stats
        WHERE df > 0 ORDER BY df DESC, dataset_seq, term LIMIT $1`,
      [limit],
    );
  }
}

/** Reads the packed form (`int8send(chunk_seq) || int4send(tf) || int4send(length)`, repeated). */
export function unpackPostings(packed: Buffer): Postings {
  const count = packed.length / POSTING_BYTES;
  const chunks = new Float64Array(count);
  const tf = new Uint32Array(count);
  const length = new Uint32Array(count);
  for (let i = 0, at = 0; i < count; i++, at += POSTING_BYTES) {
    // Chunk seqs are positive and far below 2^53: two unsigned halves read faster than a BigInt.
    chunks[i] = packed.readUInt32BE(at) * 2 ** 32 + packed.readUInt32BE(at + 4);
    tf[i] = packed.readUInt32BE(at + 8);
    length[i] = packed.readUInt32BE(at + 12);
  }
  return { chunks, tf, length };
}
