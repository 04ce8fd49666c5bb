import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { toSql } from 'pgvector';
import { DataSource } from 'typeorm';
import type { Tx } from 'src/database/transaction.js';

/** The model of a dataset's vectors: its name and dimension. */
export interface VectorModel {
  name: string;
  dimensions: number;
}

/**
 * The vectors of chunks indexed earlier: a dataset's re-embedding (`datasets reembed`), and the
 * catch-up of chunks indexed keyword-only. Its writes run in the caller's transaction, under the
 * dataset's chunk lock (`ChunkIndexRepository.lockDataset`): the rows they lock, in their own order,
 * could otherwise cross those of a document's or the dataset's deletion, and one of the two would fail
 * as a deadlock.
 */
@Injectable()
export class ChunkVectorsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** A page of a dataset's chunks in key order, after `afterSeq`. */
  chunkPage(
    datasetSeq: string,
    afterSeq: string,
    limit: number,
  ): Promise<{ seq: string; content: string }[]> {
    return this.db.query(
      `SELECT seq, content FROM chunks WHERE dataset_seq = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [datasetSeq, afterSeq, limit],
    );
  }

  /** Chunks of a dataset that have no vector yet, in key order, after `afterSeq`. */
  chunksWithoutVector(
    datasetSeq: string,
    limit: number,
    afterSeq = '0',
  ): Promise<{ seq: string; content: string }[]> {
    return this.db.query(
      `SELECT seq, content FROM chunks
        WHERE dataset_seq = $1 AND embedding IS NULL AND seq > $3 ORDER BY seq LIMIT $2`,
      [datasetSeq, limit, afterSeq],
    );
  }

  /**
   * The datasets whose chunks without a vector the catch-up embeds with `model` (across accounts: the
   * service runs it by itself): their vectors are of no other model (none yet, or `model`'s), and no
   * re-embedding is under way or was interrupted (`datasets reembed` finishes those).
   * `chunks_without_vector_idx` answers the EXISTS without reading any vector.
   */
  async datasetsMissingVectors(model: VectorModel): Promise<string[]> {
    const rows = await this.db.query<{ id: string }[]>(
      `SELECT i.dataset_id AS id FROM dataset_index i
        WHERE NOT i.reembedding AND i.chunk_count > 0
          AND (i.embedding_model IS NULL OR (i.embedding_model = $1 AND i.embedding_dimensions = $2))
          AND EXISTS (SELECT FROM chunks c WHERE c.dataset_seq = i.dataset_seq AND c.embedding IS NULL)
        ORDER BY i.dataset_seq`,
      [model.name, model.dimensions],
    );
    return rows.map((row) => row.id);
  }

  /** Takes the dataset out of vector search while it is re-embedded: new chunks come without vectors. */
  async startReembedding(tx: Tx, datasetId: string): Promise<void> {
    await tx.query('UPDATE dataset_index SET reembedding = true WHERE dataset_id = $1', [datasetId]);
  }

  /** Records the model the dataset's vectors are now of, and puts it back into vector search. */
  async finishReembedding(tx: Tx, datasetId: string, model: VectorModel): Promise<void> {
    await tx.query(
      `UPDATE dataset_index SET embedding_model = $2, embedding_dimensions = $3, reembedding = false
        WHERE dataset_id = $1`,
      [datasetId, model.name, model.dimensions],
    );
  }

  /** Replaces the vectors of chunks (re-embedding). */
  async setVectors(tx: Tx, seqs: string[], vectors: number[][]): Promise<void> {
    await tx.query(
      `UPDATE chunks SET embedding = v.embedding::vector
         FROM unnest($1::bigint[], $2::text[]) AS v(seq, embedding)
        WHERE chunks.seq = v.seq`,
      [seqs, vectors.map((vector) => toSql(vector) as string)],
    );
  }

  /**
   * Gives chunks indexed without a vector theirs, of `model`, which becomes the dataset's model when it
   * has none yet (a dataset without a model has no vectors, so they are all `model`'s). False, with
   * nothing written, when the dataset is gone, is being re-embedded, or holds another model's vectors:
   * a dataset keeps the vectors of one model.
   */
  async fillVectors(
    tx: Tx,
    datasetId: string,
    seqs: string[],
    vectors: number[][],
    model: VectorModel,
  ): Promise<boolean> {
    const [dataset] = await tx.query<
      { embedding_model: string | null; embedding_dimensions: number | null; reembedding: boolean }[]
    >('SELECT embedding_model, embedding_dimensions, reembedding FROM dataset_index WHERE dataset_id = $1', [
      datasetId,
    ]);
    if (!dataset || dataset.reembedding) return false;
    if (dataset.embedding_model === null) {
      await tx.query(
        'UPDATE dataset_index SET embedding_model = $2, embedding_dimensions = $3 WHERE dataset_id = $1',
        [datasetId, model.name, model.dimensions],
      );
    } else if (dataset.embedding_model !== model.name || dataset.embedding_dimensions !== model.dimensions) {
      return false;
    }
    await tx.query(
      `UPDATE chunks SET embedding = v.embedding::vector
         FROM unnest($1::bigint[], $2::text[]) AS v(seq, embedding)
        WHERE chunks.seq = v.seq AND chunks.embedding IS NULL`,
      [seqs, vectors.map((vector) => toSql(vector) as string)],
    );
    return true;
  }
}
