import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { toSql } from 'pgvector';
import { DataSource, QueryFailedError } from 'typeorm';
import type { Tx } from 'src/database/transaction.js';
import { compileFilters } from 'src/modules/search/filters.js';
import { SearchErrors } from 'src/modules/search/search.errors.js';

export interface Bm25Parameters {
  k1: number;
  b: number;
}

export interface LegHit {
  chunkSeq: string;
  score: number;
}

export interface ChunkRow {
  seq: string;
  id: string;
  content: string;
  documentId: string;
  metadata: Record<string, unknown>;
}

/** Below this many chunks in a dataset, the vector leg scans exactly instead of using HNSW. */
const EXACT_SCAN_MAX_CHUNKS = 20_000;
const QUERY_CANCELED = '57014';
/** Best-scored chunks checked against status and filters before falling back to all of them. */
const KEYWORD_POOL = 400;
const ALL_SCORED = 2_147_483_647;
/** How far pgvector's iterative scan may walk the shared HNSW graph before giving up (default 20,000). */
const HNSW_MAX_SCAN_TUPLES = 200_000;

/**
 * The SQL of both legs of search. Only chunks of `ready` documents are ever returned, and every
 * query runs in its own transaction with a statement timeout, so a slow query is cancelled in the
 * database rather than left running after the client has been answered.
 */
@Injectable()
export class SearchRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Okapi BM25 over the dataset's postings:
   *   score(c) = Σ_t idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len(c)/avgdl)),
   *   idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
   * with N and avgdl from the dataset's own statistics, df from the postings themselves (exact under
   * concurrent writes: it is what this transaction sees), and the query's lexemes from the dataset's
   * text search configuration (stemming, stop words), each counted once. All arithmetic is float8:
   * literals like 1.2 would otherwise be numeric, which is slow.
   */
  keyword(
    datasetSeq: string,
    language: string,
    query: string,
    filters: unknown,
    limit: number,
    bm25: Bm25Parameters,
    timeoutMs: number,
  ): Promise<LegHit[]> {
    const filter = compileFilters(filters, 8);
    // Only the `$7` best-scored chunks are checked against their document's status and the filters.
    const sql = `WITH query_terms AS (
         SELECT DISTINCT lexeme FROM unnest(to_tsvector($2::regconfig, $3))
       ), stats AS (
         SELECT chunk_count::float8 AS n, total_chunk_length::float8 / greatest(chunk_count, 1) AS avgdl
           FROM datasets WHERE seq = $1
       ), postings AS (
         SELECT p.chunk_seq, p.tf::float8 AS tf, p.length::float8 AS len,
                count(*) OVER (PARTITION BY p.term)::float8 AS df
           FROM chunk_terms p JOIN query_terms q ON p.term = q.lexeme
          WHERE p.dataset_seq = $1
       ), scored AS (
         SELECT chunk_seq,
                sum(ln(1 + (s.n - df + 0.5) / (df + 0.5))
                    * tf * ($4::float8 + 1) / (tf + $4::float8 * (1 - $5::float8 + $5::float8 * len / s.avgdl))) AS score
           FROM postings, stats s
          GROUP BY chunk_seq
          ORDER BY score DESC, chunk_seq
          LIMIT $7
       )
       SELECT sc.chunk_seq AS seq, sc.score
         FROM scored sc
         JOIN chunks c ON c.seq = sc.chunk_seq
         JOIN documents d ON d.id = c.document_id
        WHERE d.status = 'ready' AND ${filter.sql}
        ORDER BY sc.score DESC, sc.chunk_seq
        LIMIT $6`;
    const run = (tx: Tx, pool: number) =>
      tx.query<{ seq: string; score: number }[]>(sql, [
        datasetSeq,
        language,
        query,
        bm25.k1,
        bm25.b,
        limit,
        pool,
        ...filter.params,
      ]);
    return this.withTimeout(timeoutMs, async (tx) => {
      // Usually the best-scored chunks are ready and pass the filters, so only the top of the ranking is
      // joined to chunks and documents. When too few of them pass (a selective filter), every scored
      // chunk is checked. Either way the result is the exact BM25 top `limit`.
      let rows = await run(tx, Math.max(4 * limit, KEYWORD_POOL));
      if (rows.length < limit) rows = await run(tx, ALL_SCORED);
      return rows.map((row) => ({ chunkSeq: row.seq, score: row.score }));
    });
  }

  /**
   * Cosine similarity to the query vector. Small datasets are scanned exactly (through the dataset's
   * own rows); large ones use the HNSW index of the dimension with pgvector's iterative scan, which
   * keeps walking the graph until `limit` rows pass the dataset and metadata filters.
   */
  semantic(
    datasetSeq: string,
    chunkCount: number,
    vector: number[],
    filters: unknown,
    limit: number,
    timeoutMs: number,
  ): Promise<LegHit[]> {
    const dims = vector.length;
    const filter = compileFilters(filters, 4);
    const run = async (tx: Tx, exact: boolean) => {
      // The HNSW index is on the expression embedding::vector(dims); an uncast ORDER BY cannot use it.
      const distance = exact
        ? 'c.embedding <=> $2::vector'
        : `(c.embedding::vector(${dims})) <=> $2::vector(${dims})`;
      const rows = await tx.query<{ seq: string; distance: number }[]>(
        `SELECT c.seq, ${distance} AS distance
           FROM chunks c
           JOIN documents d ON d.id = c.document_id
          WHERE c.dataset_seq = $1 AND vector_dims(c.embedding) = ${dims}
            AND d.status = 'ready' AND ${filter.sql}
          ORDER BY ${distance}
          LIMIT $3`,
        [datasetSeq, toSql(vector), limit, ...filter.params],
      );
      // relaxed_order may return rows slightly out of order: sort them again.
      return rows
        .map((row) => ({ chunkSeq: row.seq, score: 1 - row.distance }))
        .sort((a, b) => b.score - a.score);
    };
    return this.withTimeout(timeoutMs, async (tx) => {
      if (chunkCount <= EXACT_SCAN_MAX_CHUNKS) return run(tx, true);
      await tx.query(`SET LOCAL hnsw.iterative_scan = relaxed_order`);
      await tx.query(
        `SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.max_scan_tuples', $2, true)`,
        [String(Math.max(40, limit)), String(HNSW_MAX_SCAN_TUPLES)],
      );
      const hits = await run(tx, false);
      // The index is shared by all datasets of this dimension: when the scan gave up before `limit`
      // rows passed this dataset's filters, the exact scan over the dataset's own rows finds them all.
      return hits.length < limit ? run(tx, true) : hits;
    });
  }

  /** The chunks to show, with their document's id and metadata. */
  async chunks(seqs: string[]): Promise<Map<string, ChunkRow>> {
    if (seqs.length === 0) return new Map();
    const rows = await this.db.query<ChunkRow[]>(
      `SELECT c.seq, c.id, c.content, c.document_id AS "documentId", d.metadata
         FROM chunks c JOIN documents d ON d.id = c.document_id
        WHERE c.seq = ANY($1::bigint[])`,
      [seqs],
    );
    return new Map(rows.map((row) => [row.seq, row]));
  }

  private async withTimeout<T>(timeoutMs: number, work: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      return await this.db.transaction(async (tx) => {
        await tx.query(`SELECT set_config('statement_timeout', $1, true), set_config('jit', 'off', true)`, [
          `${timeoutMs}ms`,
        ]);
        return work(tx);
      });
    } catch (error) {
      if (
        error instanceof QueryFailedError &&
        (error.driverError as { code?: string }).code === QUERY_CANCELED
      ) {
        throw SearchErrors.timeout();
      }
      throw error;
    }
  }
}
