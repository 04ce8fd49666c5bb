import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { toSql } from 'pgvector';
import { DataSource, QueryFailedError } from 'typeorm';
import type { Tx } from 'src/database/transaction.js';
import { type Bm25Parameters, rankBm25, type Scored } from 'src/modules/search/bm25.js';
import { type CompiledFilter, compileFilters } from 'src/modules/search/filters.js';
import { type Postings, PostingsCache, unpackPostings } from 'src/modules/search/postings-cache.js';
import { SearchErrors } from 'src/modules/search/search.errors.js';

export interface LegHit {
  chunkSeq: string;
  score: number;
}

interface TermRow {
  term: string;
  version: string;
  /** The dataset's chunk count and total chunk length (BM25's N and the sum behind avgdl). */
  n: number;
  total: number;
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
/** How far pgvector's iterative scan may walk the shared HNSW graph before giving up (default 20,000). */
const HNSW_MAX_SCAN_TUPLES = 200_000;

/**
 * The SQL of both legs of search. Only chunks of `ready` documents are ever returned, and every
 * query runs in its own transaction with a statement timeout, so a slow query is cancelled in the
 * database rather than left running after the client has been answered.
 */
@Injectable()
export class SearchRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly cache: PostingsCache,
  ) {}

  /**
   * The keyword leg: exact Okapi BM25 (see `rankBm25`) over the dataset's postings, best first, of
   * chunks of ready documents that pass the filters. One REPEATABLE READ snapshot covers the dataset's
   * statistics, the query terms' versions and document frequencies, the postings read from the
   * database, and the status and filter checks, so concurrent ingestion never mixes two states.
   * Postings already in memory at the same version are not read again (see `PostingsCache`).
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
    const filter = compileFilters(filters, 3);
    return this.withTimeout(
      timeoutMs,
      async (tx) => {
        const terms = await tx.query<TermRow[]>(
          `SELECT t.term, t.version::text AS version, d.chunk_count::float8 AS n, d.total_chunk_length::float8 AS total
             FROM datasets d JOIN term_stats t ON t.dataset_seq = d.seq
            WHERE d.seq = $1 AND t.df > 0
              AND t.term IN (SELECT unnest(tsvector_to_array(to_tsvector($2::regconfig, $3))))`,
          [datasetSeq, language, query],
        );
        if (terms.length === 0) return [];
        const postings = await this.postings(tx, datasetSeq, terms);
        const [{ n, total }] = terms;
        const rank = (k: number) => rankBm25(postings, n, total, bm25, k);
        if (filter.fields === 0) {
          // Without a filter the ranking is the answer: postings exist only for chunks of ready
          // documents (written in the transaction that makes a document ready, removed in the one that
          // takes it out of that state), and this snapshot sees them and the postings alike.
          return rank(limit).ranked.map(({ chunk, score }) => ({ chunkSeq: String(chunk), score }));
        }
        return this.firstPassing(tx, rank, filter, limit);
      },
      'REPEATABLE READ',
    );
  }

  /** The terms' postings, from memory when the version there is current, else from the database. */
  private async postings(tx: Tx, datasetSeq: string, terms: TermRow[]): Promise<Postings[]> {
    const found = new Map<string, Postings>();
    for (const { term, version } of terms) {
      const postings = this.cache.get(datasetSeq, term, version);
      if (postings) found.set(term, postings);
    }
    const missing = terms.filter(({ term }) => !found.has(term));
    if (missing.length > 0) {
      // Packed to 16 bytes a posting: far cheaper to send and read than a row per posting.
      const rows = await tx.query<{ term: string; packed: Buffer }[]>(
        `SELECT term, string_agg(int8send(chunk_seq) || int4send(tf) || int4send(length), ''::bytea) AS packed
           FROM chunk_terms WHERE dataset_seq = $1 AND term = ANY($2::text[])
          GROUP BY term`,
        [datasetSeq, missing.map(({ term }) => term)],
      );
      const versions = new Map(missing.map(({ term, version }) => [term, version]));
      for (const { term, packed } of rows) {
        const postings = unpackPostings(packed);
        found.set(term, postings);
        this.cache.set(datasetSeq, term, versions.get(term)!, postings);
      }
    }
    return [...found.values()];
  }

  /**
   * The best-ranked chunks that belong to ready documents and pass the filters, at most `limit`.
   * Usually twice `limit` is more than enough; when a selective filter leaves too few of them, the
   * next ones are checked, four times as many each round, until `limit` pass or none are left. Each
   * round ranks again (in memory, a millisecond or two) rather than keep every score between rounds.
   */
  private async firstPassing(
    tx: Tx,
    rank: (k: number) => { ranked: Scored[]; matched: number },
    filter: CompiledFilter,
    limit: number,
  ): Promise<LegHit[]> {
    const hits: LegHit[] = [];
    for (let checked = 0, next = 2 * limit; hits.length < limit; next *= 4) {
      const { ranked, matched } = rank(checked + next);
      const round = ranked.slice(checked);
      const passing = await tx.query<{ seq: string }[]>(
        `SELECT c.seq
           FROM unnest($1::bigint[]) WITH ORDINALITY AS r (seq, rank)
           JOIN chunks c ON c.seq = r.seq
           JOIN documents d ON d.id = c.document_id
          WHERE d.status = 'ready' AND ${filter.sql}
          ORDER BY r.rank
          LIMIT $2`,
        [round.map(({ chunk }) => chunk), limit - hits.length, ...filter.params],
      );
      const scores = new Map(round.map(({ chunk, score }) => [String(chunk), score]));
      hits.push(...passing.map(({ seq }) => ({ chunkSeq: seq, score: scores.get(seq)! })));
      checked += round.length;
      if (checked >= matched) break;
    }
    return hits;
  }

  /**
   * Cosine similarity to the query vector, once it is there. Small datasets are scanned exactly
   * (through the dataset's own rows); large ones use the HNSW index of the dimension with pgvector's
   * iterative scan, which keeps walking the graph until `limit` rows pass the dataset and metadata
   * filters. Without a filter no document is read: chunks exist only while their document is ready
   * (see `keyword`).
   */
  async semantic(
    datasetSeq: string,
    chunkCount: number,
    embedding: Promise<number[]>,
    filters: unknown,
    limit: number,
    timeoutMs: number,
  ): Promise<LegHit[]> {
    const filter = compileFilters(filters, 4);
    const vector = await embedding;
    const dims = vector.length;
    const documents =
      filter.fields === 0
        ? ''
        : `JOIN documents d ON d.id = c.document_id AND d.status = 'ready' AND ${filter.sql}`;
    const run = async (tx: Tx, exact: boolean) => {
      // The HNSW index is on the expression embedding::halfvec(dims), which the ORDER BY must repeat to
      // use it; the score is the single-precision cosine all the same.
      const order = exact
        ? 'c.embedding <=> $2::vector'
        : `(c.embedding::halfvec(${dims})) <=> $2::halfvec(${dims})`;
      const rows = await tx.query<{ seq: string; distance: number }[]>(
        `SELECT c.seq, c.embedding <=> $2::vector AS distance
           FROM chunks c ${documents}
          WHERE c.dataset_seq = $1 AND vector_dims(c.embedding) = ${dims}
          ORDER BY ${order}
          LIMIT $3`,
        [datasetSeq, toSql(vector), limit, ...filter.params],
      );
      // relaxed_order, and half precision, may return rows slightly out of order: sort them again.
      return rows
        .map((row) => ({ chunkSeq: row.seq, score: 1 - row.distance }))
        .sort((a, b) => b.score - a.score);
    };
    if (chunkCount <= EXACT_SCAN_MAX_CHUNKS) return this.withTimeout(timeoutMs, (tx) => run(tx, true));
    const hnsw = {
      'hnsw.iterative_scan': 'relaxed_order',
      'hnsw.ef_search': Math.max(40, limit),
      'hnsw.max_scan_tuples': HNSW_MAX_SCAN_TUPLES,
    } as const;
    return this.withTimeout(
      timeoutMs,
      async (tx) => {
        const hits = await run(tx, false);
        // The index is shared by all datasets of this dimension: when the scan gave up before `limit`
        // rows passed this dataset's filters, the exact scan over the dataset's own rows finds them all.
        return hits.length < limit ? run(tx, true) : hits;
      },
      'READ COMMITTED',
      hnsw,
    );
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

  /**
   * Runs `work` in a read-only transaction of its own, under the search timeout and with the given
   * settings (jit off: the research measured it taking half of a search's time). The transaction is
   * opened and configured in one round trip; the settings are the code's own numbers and words, never
   * a caller's input.
   */
  private async withTimeout<T>(
    timeoutMs: number,
    work: (tx: Tx) => Promise<T>,
    isolation: 'READ COMMITTED' | 'REPEATABLE READ' = 'READ COMMITTED',
    settings: Record<string, number | 'relaxed_order'> = {},
  ): Promise<T> {
    const local = { statement_timeout: Math.floor(timeoutMs), jit: 'off', ...settings };
    const runner = this.db.createQueryRunner();
    await runner.connect();
    let result: T;
    try {
      await runner.query(
        [
          `BEGIN ISOLATION LEVEL ${isolation} READ ONLY`,
          ...Object.entries(local).map(([name, value]) => `SET LOCAL ${name} = ${value}`),
        ].join('; '),
      );
      result = await work(runner.manager);
    } catch (error) {
      await runner.query('ROLLBACK').catch(() => undefined);
      await runner.release();
      if (
        error instanceof QueryFailedError &&
        (error.driverError as { code?: string }).code === QUERY_CANCELED
      ) {
        throw SearchErrors.timeout();
      }
      throw error;
    }
    // The transaction only read, so the answer need not wait for its COMMIT; the connection goes back
    // to the pool once that is done.
    void runner
      .query('COMMIT')
      .catch(() => undefined)
      .then(() => runner.release())
      .catch(() => undefined);
    return result;
  }
}
