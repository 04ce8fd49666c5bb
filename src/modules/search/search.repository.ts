import { Inject, Injectable } from '@nestjs/common';
import type pg from 'pg';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';
import { type Bm25Parameters, rankBm25, type Scored } from 'src/modules/search/bm25.js';
import { type CompiledFilter, compileFilters } from 'src/modules/search/filters.js';
import { lexemeSource } from 'src/modules/search/lexeme-source.js';
import { type Postings, PostingsCache, unpackPostings } from 'src/modules/search/postings-cache.js';
import { SearchErrors } from 'src/modules/search/search.errors.js';
import { SESSION_EF_SEARCH, SearchPool } from 'src/modules/search/search-pool.js';

/** A chunk as a result shows it. */
export interface ChunkRow {
  seq: string;
  id: string;
  content: string;
  documentId: string;
  /** The document's metadata; left out of vector hits ranked below the results shown (see `semantic`). */
  metadata?: Record<string, unknown>;
}

/** What a leg is asked for. */
export interface LegRequest {
  /** The request's metadata filters, as sent (each leg compiles them). */
  filters: unknown;
  /** How many candidates the leg ranks, best first. */
  candidates: number;
  /** How many of the best come with their rows: those that can be shown, or that a reranker reads. */
  shown: number;
  /** Cancels the leg's statements when it aborts. */
  deadline?: AbortSignal;
}

/** A leg's candidate: its chunk and score, and its row when the leg read it. */
export interface LegHit {
  chunkSeq: string;
  score: number;
  row?: ChunkRow;
}

interface TermRow {
  term: string;
  version: string;
  /** The dataset's chunk count: BM25's N. */
  n: number;
  /** The dataset's total chunk length, the sum behind BM25's average chunk length. */
  total: number;
}

/** A term's postings as the database packs them, with the term's version. */
interface PostingsRow {
  term: string;
  version: string;
  packed: Buffer;
}

/** The query terms' postings and the statistics BM25 needs, all from one state of the dataset. */
interface TermsSnapshot {
  n: number;
  total: number;
  postings: Postings[];
}

/** Runs one statement: on its own (its own snapshot), or inside a transaction. */
type Read = <T>(text: string, values?: unknown[]) => Promise<T[]>;

const QUERY_CANCELED = '57014';

/**
 * What the HNSW walk costs, in rows of the exact scan, for each candidate it must find in a dataset
 * that has the index to itself: 50 candidates took 1.9-2.9 ms in datasets of 2,500-20,000 chunks of the
 * default size, the exact scan 1.4 µs a row (docs/benchmarks.md). Sharing the index with other
 * datasets lengthens the walk by the inverse of the dataset's share of it.
 */
const WALK_ROWS_PER_CANDIDATE = 30;
/** How long a process trusts its count of the chunks in an HNSW index (see `indexedChunks`). */
const INDEX_SIZE_TTL_MS = 10_000;

/** Terms whose postings one round of the warm-up reads. */
const WARM_TERMS_PER_STATEMENT = 200;
/** The most terms the warm-up considers, whatever its budget. */
const WARM_MAX_TERMS = 1_000_000;

const CHUNK_COLUMNS = `c.seq, c.id, c.content, c.document_id AS "documentId"`;

/**
 * The query vector as a binary parameter, in pgvector's binary form (dimensions, a zero, then the
 * float4s, big-endian): node-postgres sends a Buffer in binary, and PostgreSQL reads it with the
 * type's receive function. The text form cost a 7 KB string and its parsing on both sides.
 */
function vectorParam(vector: number[]): Buffer {
  const buffer = Buffer.allocUnsafe(4 + 4 * vector.length);
  buffer.writeUInt16BE(vector.length, 0);
  buffer.writeUInt16BE(0, 2);
  for (let i = 0; i < vector.length; i++) buffer.writeFloatBE(vector[i], 4 + 4 * i);
  return buffer;
}

/** A statement cancelled (by its timeout, or at the search's deadline) becomes 504 query_timeout. */
function timeoutOr(error: unknown, timeoutMs: number): unknown {
  return (error as { code?: string } | null)?.code === QUERY_CANCELED
    ? SearchErrors.timeout(timeoutMs)
    : error;
}

/**
 * How many ranked chunks the keyword leg hands the filter check at first, per result it wants: the
 * check stops at the `limit`-th chunk that passes (see `firstPassing`), so a longer list costs only
 * its ranking and its size on the wire, while a list too short for the filter costs another round
 * trip and another ranking. Sixteen per result covers a filter that passes one chunk in ten with room
 * to spare.
 */
const CHECKED_PER_RESULT = 16;
/** How much deeper the keyword leg ranks each time the chunks ranked so far held too few that pass. */
const RANK_GROWTH = 8;

/**
 * Whether the vector leg scans the dataset's rows exactly rather than walk the HNSW index of its
 * dimension: when the scan costs less, or when it would cost about as much (its answer is exact),
 * and never for a dataset beyond `maxChunks` (`SEARCH_EXACT_SCAN_MAX_CHUNKS`). The index is shared by
 * every dataset of the dimension: to find `candidates` of this dataset's chunks, the walk passes
 * about `indexed / chunks` for each, so a small dataset among large ones is scanned, and a dataset of
 * its own is walked from a few thousand chunks. Under a metadata filter, whose share is unknown, a
 * dataset within `maxChunks` is scanned: a walk that finds too few would be followed by the scan.
 */
export function scansExactly(
  dataset: { chunks: number; indexed: number; filtered: boolean },
  candidates: number,
  maxChunks: number,
): boolean {
  const { chunks, indexed, filtered } = dataset;
  if (chunks > maxChunks) return false;
  if (filtered) return true;
  const walk = WALK_ROWS_PER_CANDIDATE * candidates * (Math.max(indexed, chunks) / Math.max(chunks, 1));
  return chunks <= walk;
}

/**
 * The SQL of both legs of search, on the search pool (see `SearchPool`). The statements a search
 * still runs at its deadline are cancelled in the database rather than left running after the client
 * has been answered (see `reader`). Only chunks of `ready` documents are ever returned, and the
 * hits that can be shown come with their chunks' rows, so that showing the results usually reads
 * nothing more.
 */
@Injectable()
export class SearchRepository {
  private readonly pool: pg.Pool;
  private readonly timeoutMs: number;
  /** Datasets of more chunks are never scanned exactly (`SEARCH_EXACT_SCAN_MAX_CHUNKS`). */
  private readonly exactScanMaxChunks: number;
  /** The chunks of each dimension's HNSW index, as counted at most `INDEX_SIZE_TTL_MS` ago. */
  private readonly indexSizes = new Map<number, { countedAt: number; chunks: Promise<number> }>();

  constructor(
    private readonly search: SearchPool,
    private readonly cache: PostingsCache,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.pool = search.pool;
    this.timeoutMs = config.search.timeoutMs;
    this.exactScanMaxChunks = config.search.exactScanMaxChunks;
  }

  /**
   * Statements each on their own: their own snapshot, one round trip. When `deadline` aborts, the
   * statement under way is cancelled in PostgreSQL and no further one starts.
   */
  private reader(deadline?: AbortSignal): Read {
    return async <T>(text: string, values?: unknown[]) => {
      const { client, release } = await this.checkout(deadline);
      let failed = false;
      try {
        return (await client.query(text, values)).rows as T[];
      } catch (error) {
        failed = true;
        throw timeoutOr(error, this.timeoutMs);
      } finally {
        // As pg's own pool.query does, a connection whose statement failed is not reused.
        release(failed);
      }
    };
  }

  /**
   * A connection of the search pool, watched by `deadline`: when it aborts, the connection's statement
   * is cancelled in PostgreSQL. Nothing more of the search starts once the deadline has passed, even
   * on a connection that only came free after it (the pool is full exactly when searches run long).
   * `release` stops watching and gives the connection back; one whose statement failed (`failed`) or
   * was cancelled is closed rather than reused, as the cancellation may still be on its way (see
   * `SearchPool.cancel`).
   */
  private async checkout(
    deadline?: AbortSignal,
  ): Promise<{ client: pg.PoolClient; release: (failed: boolean) => void }> {
    deadline?.throwIfAborted();
    const client = await this.pool.connect();
    if (deadline?.aborted) {
      client.release();
      deadline.throwIfAborted();
    }
    let cancelled = false;
    const cancel = () => {
      cancelled = true;
      this.search.cancel(client);
    };
    deadline?.addEventListener('abort', cancel, { once: true });
    const release = (failed: boolean) => {
      deadline?.removeEventListener('abort', cancel);
      client.release(cancelled || failed);
    };
    return { client, release };
  }

  /**
   * The keyword leg: exact Okapi BM25 (see `rankBm25`) over the dataset's postings, best first, of
   * chunks of ready documents that pass the filters, with their rows. The dataset's statistics, the
   * query terms' document frequencies and their postings always come from one state of the dataset,
   * so concurrent ingestion never mixes two (see `terms`). Postings exist only for chunks of ready
   * documents (written in the transaction that makes a document ready, removed in the one that takes
   * it out of that state), so without a filter the ranking is the answer; with one, the status and
   * the filter are checked in the snapshot the ranking came from.
   *
   * Without a filter, only the best `shown` hits come with their rows: a hit of this leg alone
   * ranked below the results shown is never shown (as in `semantic`), and the rows of those that can
   * be are read after the fusion (see `SearchService`). Reading all the rows cost a hybrid search
   * 0.5-0.8 ms, as they were read while the query was embedded, on the same two cores
   * (docs/benchmarks.md).
   */
  async keyword(
    dataset: { seq: string; language: string },
    query: string,
    bm25: Bm25Parameters,
    { filters, candidates, shown, deadline }: LegRequest,
  ): Promise<LegHit[]> {
    const { seq: datasetSeq, language } = dataset;
    const filter = compileFilters(filters, 3);
    const rank =
      ({ postings, n, total }: TermsSnapshot) =>
      (k: number) =>
        rankBm25(postings, n, total, bm25, k);
    if (filter.fields > 0) {
      return this.transaction(
        'REPEATABLE READ',
        async (read) => {
          const terms = (await this.terms(read, datasetSeq, language, query, true))!;
          return terms.postings.length === 0 ? [] : this.firstPassing(read, rank(terms), filter, candidates);
        },
        { deadline },
      );
    }
    const terms =
      (await this.terms(this.reader(deadline), datasetSeq, language, query, false)) ??
      (await this.transaction(
        'REPEATABLE READ',
        (read) => this.terms(read, datasetSeq, language, query, true),
        { deadline },
      ));
    const ranked = rank(terms!)(candidates).ranked;
    const rows = await this.chunks(
      datasetSeq,
      ranked.slice(0, shown).map(({ chunk }) => String(chunk)),
      deadline,
    );
    // The ranking is the snapshot's: a chunk deleted since keeps its rank, without a row, and is
    // left out when the results are read (see SearchService).
    return ranked.map(({ chunk, score }) => {
      const chunkSeq = String(chunk);
      return { chunkSeq, score, row: rows.get(chunkSeq) };
    });
  }

  /**
   * The query's terms (the lexemes of its `lexemeSource`, as a passage's are taken) with their
   * document frequencies and postings, and the dataset's statistics.
   * Postings in memory at the version the terms were read at are not read again; those that are not
   * are read with their current version. In one transaction (`inSnapshot`), that version is the same.
   * Statement by statement it may have moved on, when ingestion wrote the term in between: then this
   * returns null, and the caller asks again in a transaction. (A term's version changes in the
   * transaction that changes its postings, so equal versions mean equal postings.) The postings come
   * in the terms' order, wherever they were found (see `postings`).
   */
  private async terms(
    read: Read,
    datasetSeq: string,
    language: string,
    query: string,
    inSnapshot: boolean,
  ): Promise<TermsSnapshot | null> {
    const terms = await read<TermRow>(
      `SELECT t.term, t.version::text AS version, d.chunk_count::float8 AS n, d.total_chunk_length::float8 AS total
         FROM datasets d JOIN term_stats t ON t.dataset_seq = d.seq
        WHERE d.seq = $1 AND t.df > 0
          AND t.term IN (SELECT unnest(tsvector_to_array(to_tsvector($2::regconfig, $3))))
        ORDER BY t.term`,
      [datasetSeq, language, lexemeSource(query)],
    );
    if (terms.length === 0) return { n: 0, total: 0, postings: [] };
    const postings = await this.postings(read, datasetSeq, terms, inSnapshot);
    return postings && { n: terms[0].n, total: terms[0].total, postings };
  }

  /**
   * The terms' postings, from memory when the version there is current, else from the database; null
   * when, statement by statement, a term read from the database is no longer at the version asked for
   * (see `terms`). In one snapshot the versions are those asked for, and a term without postings
   * (which `term_stats` should not list) is taken as having none.
   *
   * The postings come in the order of `terms`, whichever were in memory: scores are sums of floats,
   * whose last bit depends on the order they are added in, so terms added in the order they happened
   * to be found in gave a chunk a score that depended on what the process had in memory, and chunks
   * of mathematically equal scores an order that differed from process to process.
   */
  private async postings(
    read: Read,
    datasetSeq: string,
    terms: TermRow[],
    inSnapshot: boolean,
  ): Promise<Postings[] | null> {
    const found = new Map<string, Postings>();
    const missing = new Map<string, string>();
    for (const { term, version } of terms) {
      const postings = this.cache.get(datasetSeq, term, version);
      if (postings) found.set(term, postings);
      else missing.set(term, version);
    }
    if (missing.size > 0) {
      const rows = await this.readPostings(read, datasetSeq, [...missing.keys()]);
      const moved = (): boolean =>
        rows.length !== missing.size || rows.some(({ term, version }) => missing.get(term) !== version);
      if (!inSnapshot && moved()) return null;
      for (const row of rows) found.set(row.term, this.remember(datasetSeq, row));
    }
    return terms.flatMap(({ term }) => found.get(term) ?? []);
  }

  /** Terms' postings with their current versions, packed (see `unpackPostings`). */
  private readPostings(read: Read, datasetSeq: string, terms: string[]): Promise<PostingsRow[]> {
    // Packed to 16 bytes a posting: far cheaper to send and read than a row per posting. Aggregated
    // before the versions are joined: joined first, the planner hashed all of term_stats and sorted
    // every posting on disk (93 ms against 15 for four common terms).
    return read(
      `SELECT p.term, t.version::text AS version, p.packed
         FROM term_stats t
         JOIN (SELECT term, string_agg(int8send(chunk_seq) || int4send(tf) || int4send(length), ''::bytea) AS packed
                 FROM chunk_terms WHERE dataset_seq = $1 AND term = ANY($2::text[])
                GROUP BY term) p ON p.term = t.term
        WHERE t.dataset_seq = $1 AND t.term = ANY($2::text[])`,
      [datasetSeq, terms],
    );
  }

  /** A term's postings as read, unpacked and kept in memory at their version. */
  private remember(datasetSeq: string, { term, version, packed }: PostingsRow): Postings {
    const postings = unpackPostings(packed);
    this.cache.set(datasetSeq, term, version, postings);
    return postings;
  }

  /**
   * Reads into memory the postings of the most frequent terms of all datasets, most postings first,
   * until `budget` postings: the terms most queries hold and the slowest to read on demand. Each is
   * kept at the version it was read with, like any other (see `PostingsCache`), so warming never
   * changes an answer. Stops early when `stop()` says so, or when the time is up. Returns the number
   * of postings read.
   */
  async warm(budget: number, stop: () => boolean): Promise<number> {
    // Every term holds at least one posting, so the budget bounds the terms to consider: PostgreSQL
    // keeps the most frequent ones with a bounded sort, and their running total is cut here.
    const read = this.reader();
    const frequent = await read<{ datasetSeq: string; term: string; df: number }>(
      `SELECT dataset_seq::text AS "datasetSeq", term, df FROM term_stats
        WHERE df > 0 ORDER BY df DESC, dataset_seq, term LIMIT $1`,
      [Math.min(budget, WARM_MAX_TERMS)],
    );
    let total = 0;
    const chosen = frequent.filter(({ df }) => (total += df) <= budget);
    let postings = 0;
    for (let i = 0; i < chosen.length && !stop(); i += WARM_TERMS_PER_STATEMENT) {
      // In order of frequency, whatever their dataset, so that stopping early leaves out the rarest.
      const byDataset = new Map<string, string[]>();
      for (const { datasetSeq, term } of chosen.slice(i, i + WARM_TERMS_PER_STATEMENT)) {
        const terms = byDataset.get(datasetSeq) ?? [];
        terms.push(term);
        byDataset.set(datasetSeq, terms);
      }
      for (const [datasetSeq, terms] of byDataset) {
        if (stop()) break;
        for (const row of await this.readPostings(read, datasetSeq, terms)) {
          postings += this.remember(datasetSeq, row).chunks.length;
        }
      }
    }
    return postings;
  }

  /**
   * The best-ranked chunks that belong to ready documents and pass the filters, at most `limit`, with
   * their rows. One statement checks the ranked chunks in rank order and stops at the `limit`-th that
   * passes, so it reads the rows the answer needs and no more, in one round trip. Only when the
   * chunks ranked so far hold too few that pass does the leg rank deeper (`RANK_GROWTH` times) and
   * check the chunks it had not, until `limit` pass or no ranked chunk is left.
   */
  private async firstPassing(
    read: Read,
    rank: (k: number) => { ranked: Scored[]; matched: number },
    filter: CompiledFilter,
    limit: number,
  ): Promise<LegHit[]> {
    const hits: LegHit[] = [];
    let checked = 0;
    for (let depth = CHECKED_PER_RESULT * limit; hits.length < limit; depth *= RANK_GROWTH) {
      const { ranked, matched } = rank(depth);
      const round = ranked.slice(checked);
      // The rows come in rank order (PostgreSQL knows the function scan's order is the ordinality's),
      // so the statement stops after the last row wanted, whatever the length of the list. For a
      // filter it expects to pass few, the planner may start instead from the documents that pass,
      // found through their index, and join their chunks to the list.
      const passing = await read<ChunkRow & { rank: number }>(
        `SELECT ${CHUNK_COLUMNS}, d.metadata, r.rank::int4 AS rank
           FROM unnest($1::bigint[]) WITH ORDINALITY AS r (seq, rank)
           JOIN chunks c ON c.seq = r.seq
           JOIN documents d ON d.id = c.document_id
          WHERE d.status = 'ready' AND ${filter.sql}
          ORDER BY r.rank
          LIMIT $2`,
        [round.map(({ chunk }) => chunk), limit - hits.length, ...filter.params],
      );
      // Each row's place in the list it was checked in (from 1) gives its score.
      for (const { rank, ...row } of passing) {
        hits.push({ chunkSeq: row.seq, score: round[rank - 1].score, row });
      }
      checked = ranked.length;
      if (checked >= matched) break;
    }
    return hits;
  }

  /**
   * The vector leg: cosine similarity to the query vector, once it is there, best first, with the
   * chunks' rows. A dataset is scanned exactly (through its own rows) when that costs less (see
   * `scansExactly`); otherwise the leg uses the HNSW index of the dimension with pgvector's iterative
   * scan, which keeps walking the graph until `candidates` rows pass the dataset and metadata filters.
   * Without a filter no document is read for the search: chunks exist only while their document is
   * ready (see `keyword`).
   *
   * Only the best `shown` hits carry their document's metadata. A hit below that can still be shown
   * when the keyword leg ranked it too (fusion adds the two); its metadata is then read after the
   * fusion, unless the keyword leg's row has it. A hit of this leg alone cannot: each of the hits
   * above it scores more in the fusion than it does.
   */
  async semantic(
    dataset: { seq: string; chunks: number; dimensions: number; model: string },
    embedding: Promise<number[]>,
    { filters, candidates, shown, deadline }: LegRequest,
  ): Promise<LegHit[]> {
    const filter = compileFilters(filters, 5);
    const read = this.reader(deadline);
    const datasetSeq = dataset.seq;
    const choose = (indexed: number) =>
      scansExactly({ ...dataset, indexed, filtered: filter.fields > 0 }, candidates, this.exactScanMaxChunks);
    // The index's size is counted (while the query is embedded) only when it can change the choice:
    // when the dataset alone in the index and among any number of others would not be searched alike.
    const alone = choose(dataset.chunks);
    const exact =
      alone === choose(Number.MAX_SAFE_INTEGER)
        ? Promise.resolve(alone)
        : this.indexedChunks(dataset.dimensions).then(choose);
    exact.catch(() => undefined); // awaited below, unless the embedding fails first
    const vector = await embedding;
    const dims = vector.length;
    // The dataset's vectors must still be those of the query's model when the statement reads them:
    // a re-embedding begun since the dataset was looked up would mix two models' vectors. Checked in
    // the statement's own snapshot, once (it does not depend on the row), it answers nothing then.
    const model = 5 + filter.params.length;
    const documents =
      filter.fields === 0
        ? ''
        : `JOIN documents d ON d.id = c.document_id AND d.status = 'ready' AND ${filter.sql}`;
    const run = async (read: Read, exact: boolean) => {
      // The HNSW index is on the expression embedding::halfvec(dims), which the ORDER BY must repeat to
      // use it; the score is the single-precision cosine all the same. relaxed_order, and half
      // precision, may return rows slightly out of order: they are ranked again by their distance.
      const order = exact
        ? 'c.embedding <=> $2::vector'
        : `(c.embedding::halfvec(${dims})) <=> $2::halfvec(${dims})`;
      const rows = await read<ChunkRow & { distance: number; metadata: ChunkRow['metadata'] | null }>(
        `SELECT r.seq, r.id, r.content, r."documentId", r.distance,
                CASE WHEN r.rank <= $4 THEN (SELECT m.metadata FROM documents m WHERE m.id = r."documentId") END AS metadata
           FROM (SELECT n.*, row_number() OVER (ORDER BY n.distance, n.seq) AS rank
                   FROM (SELECT ${CHUNK_COLUMNS}, c.embedding <=> $2::vector AS distance
                           FROM chunks c ${documents}
                          WHERE c.dataset_seq = $1 AND vector_dims(c.embedding) = ${dims}
                            AND EXISTS (SELECT FROM datasets s
                                         WHERE s.seq = $1 AND s.embedding_model = $${model} AND NOT s.reembedding)
                          ORDER BY ${order}
                          LIMIT $3) n) r`,
        [datasetSeq, vectorParam(vector), candidates, shown, ...filter.params, dataset.model],
      );
      // Ranked as the SQL ranked them for the metadata: by distance, then chunk.
      return rows
        .sort((a, b) => a.distance - b.distance || Number(a.seq) - Number(b.seq))
        .map(({ distance, metadata, ...row }) => ({
          chunkSeq: row.seq,
          score: 1 - distance,
          row: metadata === null ? row : { ...row, metadata },
        }));
    };
    if (await exact) return run(read, true);
    const hits =
      candidates <= SESSION_EF_SEARCH
        ? await run(read, false)
        : await this.transaction('READ COMMITTED', (read) => run(read, false), {
            deadline,
            settings: { 'hnsw.ef_search': candidates },
          });
    // The index is shared by all datasets of this dimension: when the scan gave up before `candidates` rows
    // passed this dataset's filters, the exact scan over the dataset's own rows finds them all.
    return hits.length < candidates ? run(read, true) : hits;
  }

  /**
   * The chunks of all datasets embedded at `dimensions`, which the HNSW index of the dimension holds
   * (each dataset's count is exact; their sum is read again every `INDEX_SIZE_TTL_MS`: it only chooses
   * how the leg searches, and a count a few seconds old chooses as well).
   */
  private indexedChunks(dimensions: number): Promise<number> {
    const known = this.indexSizes.get(dimensions);
    if (known && performance.now() - known.countedAt < INDEX_SIZE_TTL_MS) return known.chunks;
    // Shared by the searches of the next seconds: not cancelled at the deadline of the one that asked.
    const chunks = this.reader()<{ chunks: number }>(
      `SELECT coalesce(sum(chunk_count), 0)::float8 AS chunks FROM datasets WHERE embedding_dimensions = $1`,
      [dimensions],
    ).then(([row]) => row.chunks);
    const entry = { countedAt: performance.now(), chunks };
    this.indexSizes.set(dimensions, entry);
    // A failed count is not kept (the next search counts again), and fails the search it was for.
    chunks.catch(() => {
      if (this.indexSizes.get(dimensions) === entry) this.indexSizes.delete(dimensions);
    });
    return chunks;
  }

  /** The dataset's chunks' rows, with their document's id and metadata. */
  async chunks(datasetSeq: string, seqs: string[], deadline?: AbortSignal): Promise<Map<string, ChunkRow>> {
    if (seqs.length === 0) return new Map();
    const rows = await this.reader(deadline)<ChunkRow>(
      `SELECT ${CHUNK_COLUMNS}, d.metadata
         FROM chunks c JOIN documents d ON d.id = c.document_id
        WHERE c.seq = ANY($2::bigint[]) AND c.dataset_seq = $1`,
      [datasetSeq, seqs],
    );
    return new Map(rows.map((row) => [row.seq, row]));
  }

  /**
   * Runs `work` in a read-only transaction of its own, with the given settings for its length. It is
   * opened and configured in one round trip; the settings are the code's own numbers, never a
   * caller's input. When `deadline` aborts, the statement under way is cancelled (as in `reader`).
   */
  private async transaction<T>(
    isolation: 'READ COMMITTED' | 'REPEATABLE READ',
    work: (read: Read) => Promise<T>,
    { deadline, settings = {} }: { deadline?: AbortSignal; settings?: Record<string, number> },
  ): Promise<T> {
    // A connection whose statement was cancelled, or that cannot even end its transaction, is closed
    // rather than handed to the next search.
    const { client, release } = await this.checkout(deadline);
    const read: Read = async <R>(text: string, values?: unknown[]) => {
      deadline?.throwIfAborted();
      return (await client.query(text, values)).rows as R[];
    };
    let result: T;
    try {
      await client.query(
        [
          `BEGIN ISOLATION LEVEL ${isolation} READ ONLY`,
          ...Object.entries(settings).map(([name, value]) => `SET LOCAL ${name} = ${value}`),
        ].join('; '),
      );
      result = await work(read);
    } catch (error) {
      await client.query('ROLLBACK').then(
        () => release(false),
        () => release(true),
      );
      throw timeoutOr(error, this.timeoutMs);
    }
    // The transaction only read, so the answer need not wait for its COMMIT; the connection goes back
    // to the pool once that is done.
    void client.query('COMMIT').then(
      () => release(false),
      () => release(true),
    );
    return result;
  }
}
