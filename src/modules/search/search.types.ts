import type { ChunkRow, PassingDocuments } from 'src/modules/chunk-index/chunk-reads.repository.js';
import type { ParsedFilter } from 'src/modules/search/filters.js';

/** What a leg is asked for. */
export interface LegRequest {
  /** The request's metadata filters, parsed once for all legs and queries. */
  filter: ParsedFilter;
  /**
   * The documents that pass the filters, counted once for all queries of a request when there are
   * filters and the vector leg runs: their chunks' count chooses how each leg applies the filters
   * (`scansExactly`, `ranksPassing`).
   */
  passing?: Promise<PassingDocuments>;
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
  /** The leg's own measure: BM25, or cosine similarity. */
  score: number;
  /** How well the chunk answers the query by this leg's evidence, on the contract's 0..1 scale. */
  relevance: number;
  /** The keyword leg's BM25 ceiling for the query (`bm25Ceiling`), which `relevance` is measured against. */
  ceiling?: number;
  /** The keyword leg's number of distinct query terms. */
  terms?: number;
  /**
   * The dataset's count of chunks ever removed from its index, in the snapshot the leg ranked in: legs
   * that read different counts may hold two versions of a replaced document (`SearchService`).
   */
  removed?: string;
  row?: ChunkRow;
}

/** A query's embedding started before its request was checked (see `EarlyQueryEmbedding`). */
export interface EarlyVector {
  query: string;
  vector: Promise<number[]>;
  /** When it started (performance.now()), which is when the search's own time starts. */
  startedAt: number;
}
