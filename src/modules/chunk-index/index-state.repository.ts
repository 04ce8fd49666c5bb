import { Injectable } from '@nestjs/common';
import type { Read } from 'src/database/read.js';
import type { Tx } from 'src/database/transaction.js';

/**
 * The search index's state of a dataset (`dataset_index`): BM25's statistics, the model its vectors
 * are of and the one of the generation being built beside them, and the dimension of its own HNSW
 * index once built.
 */
export interface IndexState {
  /** BM25's N. */
  chunkCount: number;
  /** The sum behind BM25's average chunk length. */
  totalChunkLength: number;
  /** Null until its first vectors are written. */
  embeddingModel: string | null;
  embeddingDimensions: number | null;
  /**
   * The model of the vectors being built beside the searched ones (a re-embedding, ReembedService),
   * null when none is: searches use `embeddingModel`'s until the switch.
   */
  nextEmbeddingModel: string | null;
  nextEmbeddingDimensions: number | null;
  /** The dimension of the dataset's own HNSW index (docs/search.md, per-dataset indexes). */
  vectorIndexDimensions: number | null;
  /** The weights chosen for its hybrid searches (`FusionChoiceRepository`), null until chosen. */
  fusion: { keyword: number; semantic: number } | null;
}

const COLUMNS = `i.chunk_count::float8 AS "chunkCount",
  i.total_chunk_length::float8 AS "totalChunkLength", i.embedding_model AS "embeddingModel",
  i.embedding_dimensions AS "embeddingDimensions", i.next_embedding_model AS "nextEmbeddingModel",
  i.next_embedding_dimensions AS "nextEmbeddingDimensions", i.vector_index_dimensions AS "vectorIndexDimensions",
  CASE WHEN f.dataset_seq IS NOT NULL
       THEN json_build_object('keyword', f.keyword_weight, 'semantic', f.semantic_weight) END AS fusion`;

/** A dataset whose index has no row (it was made by a writer other than the service): nothing in it. */
const EMPTY: IndexState = Object.freeze({
  chunkCount: 0,
  totalChunkLength: 0,
  embeddingModel: null,
  embeddingDimensions: null,
  nextEmbeddingModel: null,
  nextEmbeddingDimensions: null,
  vectorIndexDimensions: null,
  fusion: null,
});

/** How many datasets' seqs a process keeps by id (`IndexStateRepository.of`): about 100 bytes each. */
const KNOWN_SEQS = 10_000;

/**
 * The reads of a dataset's index state, and the row's making. Its other writes are those of the index's
 * repositories that change what the state describes, in their transactions: the statistics with the
 * chunks (`ChunkIndexRepository`), the model with the vectors (`ChunkVectorsRepository`), the own
 * index with its build (`DatasetVectorIndexRepository`).
 */
@Injectable()
export class IndexStateRepository {
  /**
   * Datasets' seqs by id, learnt from the reads of their state. A dataset's seq never changes nor is
   * reused, and a read by seq is one Citus routes to the dataset's shard; by id it asks every shard.
   */
  private readonly seqs = new Map<string, string>();

  /** The state of a new dataset's index, in the transaction that makes the dataset. */
  async create(tx: Tx, dataset: { id: string; seq: string }): Promise<void> {
    await tx.query(`INSERT INTO dataset_index (dataset_seq, dataset_id) VALUES ($1, $2)`, [
      dataset.seq,
      dataset.id,
    ]);
  }

  /** The dataset's key in the index's tables, or null when the index has no such dataset. */
  async seqOf(read: Read, datasetId: string): Promise<string | null> {
    const [row] = await read<{ seq: string }>(
      `SELECT dataset_seq::text AS seq FROM dataset_index WHERE dataset_id = $1`,
      [datasetId],
    );
    return row?.seq ?? null;
  }

  /** The state of the dataset's index, through `read` (a search's connection, or a transaction). */
  async of(read: Read, datasetId: string): Promise<IndexState> {
    const known = this.seqs.get(datasetId);
    // The weights in the same statement: a search reads them at no extra round trip.
    const [row] = await read<IndexState & { seq: string }>(
      `SELECT ${COLUMNS}, i.dataset_seq::text AS seq
         FROM dataset_index i LEFT JOIN dataset_fusion f ON f.dataset_seq = i.dataset_seq
        WHERE ${known === undefined ? 'i.dataset_id = $1' : 'i.dataset_seq = $1'}`,
      [known ?? datasetId],
    );
    if (!row) return EMPTY;
    const { seq, ...state } = row;
    if (known === undefined && seq) this.learn(datasetId, seq);
    return state;
  }

  private learn(datasetId: string, seq: string): void {
    if (this.seqs.size >= KNOWN_SEQS) this.seqs.delete(this.seqs.keys().next().value as string);
    this.seqs.set(datasetId, seq);
  }
}
