import { setImmediate } from 'node:timers/promises';
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

/** A dataset's next generation of vectors, being built: its model, and how far it has come. */
export interface Generation {
  model: string;
  dimensions: number;
  /** The model of the vectors searched meanwhile, null for a dataset without any. */
  fromModel: string | null;
  requestedAt: Date;
  /** The dataset's chunks, and those of them with a vector of the new generation. */
  chunks: number;
  embedded: number;
}

/** Chunks of the version replaced whose vectors are read a statement (`reusableVectors`). */
const REUSE_WINDOW = 1_000;

function sameModel(found: { model: string | null; dimensions: number | null }, model: VectorModel): boolean {
  return found.model === model.name && found.dimensions === model.dimensions;
}

/**
 * The vectors of chunks indexed earlier: a dataset's re-embedding, which builds a generation of
 * vectors beside the searched one and then switches to it, and the catch-up of chunks indexed
 * keyword-only. Its writes run in the caller's transaction, under the
 * dataset's chunk lock (`ChunkIndexRepository.lockDataset`): the rows they lock, in their own order,
 * could otherwise cross those of a document's or the dataset's deletion, and one of the two would fail
 * as a deadlock.
 */
@Injectable()
export class ChunkVectorsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * The vectors of `model` that the document's indexed chunks hold, by the SHA-256 of their content
   * (hex), for the contents among `hashes`: what a new version of the document reuses for its
   * unchanged chunks (a passage's vector depends on its content alone). They come from the generation
   * that takes `model`'s vectors, the one being built first, as indexing chooses (`replaceChunks`).
   * Read `REUSE_WINDOW` chunks a statement, by their place in the document (`chunks` of them), with a
   * turn of the event loop between: a document's vectors parsed at once would hold the thread.
   */
  async reusableVectors(
    datasetSeq: string,
    documentId: string,
    chunks: number,
    model: VectorModel,
    hashes: string[],
  ): Promise<Map<string, number[]>> {
    const found = new Map<string, number[]>();
    if (hashes.length === 0) return found;
    for (let first = 0; first < chunks; first += REUSE_WINDOW) {
      if (first > 0) await setImmediate();
      const rows = await this.db.query<{ hash: string; vector: string }[]>(
        `SELECT DISTINCT ON (v.hash) v.hash, v.vector
           FROM (SELECT encode(sha256(convert_to(c.content, 'UTF8')), 'hex') AS hash,
                        (CASE WHEN s.next_embedding_model = $2 AND s.next_embedding_dimensions = $3 THEN c.next_embedding
                              WHEN s.embedding_model = $2 AND s.embedding_dimensions = $3 THEN c.embedding END)::text AS vector
                   FROM chunks c JOIN dataset_index s ON s.dataset_seq = c.dataset_seq
                  WHERE c.dataset_seq = $7 AND c.document_id = $1 AND c.ordinal >= $5 AND c.ordinal < $5 + $6) v
          WHERE v.vector IS NOT NULL AND v.hash = ANY($4::text[])`,
        [documentId, model.name, model.dimensions, hashes, first, REUSE_WINDOW, datasetSeq],
      );
      for (const { hash, vector } of rows) found.set(hash, JSON.parse(vector) as number[]);
    }
    return found;
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
   * re-embedding is under way (it embeds them).
   * `chunks_without_vector_idx` answers the EXISTS without reading any vector.
   */
  async datasetsMissingVectors(model: VectorModel): Promise<string[]> {
    const rows = await this.db.query<{ id: string }[]>(
      `SELECT i.dataset_id AS id FROM dataset_index i
        WHERE i.next_embedding_model IS NULL AND i.chunk_count > 0
          AND (i.embedding_model IS NULL OR (i.embedding_model = $1 AND i.embedding_dimensions = $2))
          AND EXISTS (SELECT FROM chunks c WHERE c.dataset_seq = i.dataset_seq AND c.embedding IS NULL)
        ORDER BY i.dataset_seq`,
      [model.name, model.dimensions],
    );
    return rows.map((row) => row.id);
  }

  /**
   * Starts building the dataset's next generation of vectors, of `model`, beside the searched one:
   * `requested`; `same` when one of `model` is being built already, `other` when one of another model
   * is (nothing is written then), null when there is no such dataset.
   */
  async requestGeneration(
    tx: Tx,
    datasetId: string,
    model: VectorModel,
  ): Promise<'requested' | 'same' | 'other' | null> {
    const [state] = await tx.query<{ model: string | null; dimensions: number | null }[]>(
      `SELECT next_embedding_model AS model, next_embedding_dimensions AS dimensions
         FROM dataset_index WHERE dataset_id = $1`,
      [datasetId],
    );
    if (!state) return null;
    if (state.model !== null) return sameModel(state, model) ? 'same' : 'other';
    await tx.query(
      `UPDATE dataset_index SET next_embedding_model = $2, next_embedding_dimensions = $3, reembed_requested_at = now()
        WHERE dataset_id = $1`,
      [datasetId, model.name, model.dimensions],
    );
    return 'requested';
  }

  /** The generation being built for the dataset, with its progress; null when none is (or no dataset). */
  async generation(datasetId: string): Promise<Generation | null> {
    const [row] = await this.db.query<Generation[]>(
      `SELECT i.next_embedding_model AS model, i.next_embedding_dimensions AS dimensions,
              i.reembed_requested_at AS "requestedAt", i.embedding_model AS "fromModel", n.chunks, n.embedded
         FROM dataset_index i,
              LATERAL (SELECT count(*)::int AS chunks, count(c.next_embedding)::int AS embedded
                         FROM chunks c WHERE c.dataset_seq = i.dataset_seq) n
        WHERE i.dataset_id = $1 AND i.next_embedding_model IS NOT NULL`,
      [datasetId],
    );
    return row ?? null;
  }

  /** The datasets whose next generation is of `model` (across accounts: workers build them by themselves). */
  async datasetsBuilding(model: VectorModel): Promise<string[]> {
    const rows = await this.db.query<{ id: string }[]>(
      `SELECT dataset_id AS id FROM dataset_index
        WHERE next_embedding_model = $1 AND next_embedding_dimensions = $2 ORDER BY reembed_requested_at`,
      [model.name, model.dimensions],
    );
    return rows.map((row) => row.id);
  }

  /** Chunks of a dataset without a vector of its next generation, in key order, after `afterSeq`. */
  chunksWithoutNextVector(
    datasetSeq: string,
    limit: number,
    afterSeq = '0',
  ): Promise<{ seq: string; content: string }[]> {
    return this.db.query(
      `SELECT seq, content FROM chunks
        WHERE dataset_seq = $1 AND next_embedding IS NULL AND seq > $3 ORDER BY seq LIMIT $2`,
      [datasetSeq, limit, afterSeq],
    );
  }

  /**
   * Writes chunks' vectors of the dataset's next generation; false, with nothing written, when the
   * generation being built is no longer of `model` (cancelled, or switched to).
   */
  async setNextVectors(
    tx: Tx,
    datasetId: string,
    seqs: string[],
    vectors: number[][],
    model: VectorModel,
  ): Promise<boolean> {
    if (!(await this.building(tx, datasetId, model))) return false;
    await tx.query(
      `UPDATE chunks SET next_embedding = v.embedding::vector
         FROM unnest($1::bigint[], $2::text[]) AS v(seq, embedding)
        WHERE chunks.seq = v.seq`,
      [seqs, vectors.map((vector) => toSql(vector) as string)],
    );
    return true;
  }

  /**
   * Makes the next generation, of `model`, the searched one, in one statement: every chunk's vector
   * is replaced at once, and the dataset's model with them. `incomplete`, with nothing written, while
   * a chunk has no vector of it yet (indexed since the build's last page); `refused` when the
   * generation being built is no longer of `model`.
   */
  async switchGeneration(
    tx: Tx,
    datasetId: string,
    model: VectorModel,
  ): Promise<'switched' | 'incomplete' | 'refused'> {
    const seq = await this.building(tx, datasetId, model);
    if (!seq) return 'refused';
    const [missing] = await tx.query<{ found: boolean }[]>(
      `SELECT EXISTS (SELECT FROM chunks WHERE dataset_seq = $1 AND next_embedding IS NULL) AS found`,
      [seq],
    );
    if (missing.found) return 'incomplete';
    await tx.query(
      `UPDATE chunks SET embedding = next_embedding, next_embedding = NULL WHERE dataset_seq = $1`,
      [seq],
    );
    await tx.query(
      `UPDATE dataset_index SET embedding_model = $2, embedding_dimensions = $3,
              next_embedding_model = NULL, next_embedding_dimensions = NULL, reembed_requested_at = NULL
        WHERE dataset_seq = $1`,
      [seq, model.name, model.dimensions],
    );
    return 'switched';
  }

  /** Drops the generation being built, if any: whether there was one. */
  async cancelGeneration(tx: Tx, datasetId: string): Promise<boolean> {
    // In a WITH: TypeORM answers a bare UPDATE with its rows and count, not its rows.
    const [row] = await tx.query<{ seq: string }[]>(
      `WITH cancelled AS (
         UPDATE dataset_index SET next_embedding_model = NULL, next_embedding_dimensions = NULL,
                reembed_requested_at = NULL
          WHERE dataset_id = $1 AND next_embedding_model IS NOT NULL
          RETURNING dataset_seq)
       SELECT dataset_seq::text AS seq FROM cancelled`,
      [datasetId],
    );
    if (!row) return false;
    await tx.query(
      `UPDATE chunks SET next_embedding = NULL WHERE dataset_seq = $1 AND next_embedding IS NOT NULL`,
      [row.seq],
    );
    return true;
  }

  /** The dataset's key when the generation it builds is of `model`, else null. */
  private async building(tx: Tx, datasetId: string, model: VectorModel): Promise<string | null> {
    const [row] = await tx.query<{ seq: string; model: string; dimensions: number }[]>(
      `SELECT dataset_seq::text AS seq, next_embedding_model AS model, next_embedding_dimensions AS dimensions
         FROM dataset_index WHERE dataset_id = $1 AND next_embedding_model IS NOT NULL`,
      [datasetId],
    );
    return row && sameModel(row, model) ? row.seq : null;
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
      { embedding_model: string | null; embedding_dimensions: number | null; building: boolean }[]
    >(
      `SELECT embedding_model, embedding_dimensions, next_embedding_model IS NOT NULL AS building
         FROM dataset_index WHERE dataset_id = $1`,
      [datasetId],
    );
    if (!dataset || dataset.building) return false;
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
