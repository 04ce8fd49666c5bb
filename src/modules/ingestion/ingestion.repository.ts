import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { ProcessingErrorPayload } from 'src/common/events/domain-events.js';
import { ChunkIndexRepository, type IndexedChunk } from 'src/modules/chunk-index/chunk-index.repository.js';
import type { DocumentEntity, ProcessingStage } from 'src/modules/documents/document.entity.js';

/** Identifies one run of the pipeline for one document. */
export interface Run {
  documentId: string;
  generation: number;
}

export interface StaleRun {
  id: string;
  datasetId: string;
  generation: number;
  recoveries: number;
}

const STILL_RUNNING = `id = $1 AND generation = $2 AND status = 'processing'`;

/**
 * A run's end, set as the document leaves `processing` (with `FROM ${RUN_ENDED}`): `processed_at` is
 * the clock as the statement runs, not the transaction's start (a large document's chunks take seconds
 * to index before it), and `processing_time_ms` runs from the run's start to it, queue wait included
 * (docs/decisions.md), both on the database's clock. The time is held within an integer's range: a
 * document left processing for 25 days (no worker running) must still be able to fail.
 */
const PROCESSING_TIME = `processed_at = ended.at,
  processing_time_ms = least(greatest(round(extract(epoch FROM ended.at - processing_started_at) * 1000), 0), 2147483647)::int`;
const RUN_ENDED = `(SELECT clock_timestamp() AS at) ended`;

@Injectable()
export class IngestionRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly chunkIndex: ChunkIndexRepository,
  ) {}

  /**
   * The document and its content, if this run is still the current one and still processing (null when
   * it is gone, with its dataset or alone). A document is deleted with its dataset, and one statement
   * sees both or neither; a deletion after it is caught by `index`, which then writes nothing.
   */
  async loadRun(run: Run): Promise<{ document: DocumentEntity; content: Buffer } | null> {
    const [row] = await this.db.query<(DocumentEntity & { content: Buffer })[]>(
      `SELECT d.id, d.dataset_id AS "datasetId", d.kind, d.filename, s.content
         FROM documents d JOIN document_sources s ON s.document_id = d.id
        WHERE d.id = $1 AND d.generation = $2 AND d.status = 'processing'`,
      [run.documentId, run.generation],
    );
    if (!row) return null;
    const { content, ...document } = row;
    return { document, content };
  }

  /** Records the stage a run is in; also its heartbeat, which tells the recovery sweep it is alive. */
  async setProgress(run: Run, stage: ProcessingStage, percent: number): Promise<void> {
    await this.db.query(`UPDATE documents SET progress = $3, heartbeat_at = now() WHERE ${STILL_RUNNING}`, [
      run.documentId,
      run.generation,
      { stage, percent: Math.round(percent) },
    ]);
  }

  /**
   * Writes a run's chunks, vectors and BM25 postings and marks the document ready, in one transaction.
   * The dataset's chunk lock is taken first (`ChunkIndexRepository.lockDataset`: the order every writer
   * of a dataset's chunks follows, so they cannot deadlock), then the document's row: if it was deleted
   * or restarted meanwhile, nothing is written. The dataset row itself is written last, so that uploads
   * into the dataset do not wait for the chunks. Chunks of an earlier run are replaced.
   * Returns the run's processing time (see `PROCESSING_TIME`), or null when the run was no longer
   * current.
   */
  async index(
    run: Run,
    datasetId: string,
    chunks: IndexedChunk[],
    embeddings: { model: string; dimensions: number; vectors: number[][] } | null,
  ): Promise<number | null> {
    return this.db.transaction('READ COMMITTED', async (tx) => {
      // The planner finds a large document's statements costly enough for JIT compilation, which they
      // never repay (docs/ingestion.md).
      await tx.query('SET LOCAL jit = off');
      await this.chunkIndex.lockDataset(tx, datasetId);
      const [dataset] = await tx.query<
        {
          seq: string;
          language: string;
          embedding_model: string | null;
          embedding_dimensions: number | null;
          reembedding: boolean;
        }[]
      >(
        `SELECT seq, language::text AS language, embedding_model, embedding_dimensions, reembedding
           FROM datasets WHERE id = $1`,
        [datasetId],
      );
      if (!dataset) return null;
      const [current] = await tx.query<unknown[]>(
        `SELECT 1 FROM documents WHERE ${STILL_RUNNING} FOR UPDATE`,
        [run.documentId, run.generation],
      );
      if (!current) return null;

      const vectors = embeddings && this.acceptsEmbeddings(dataset, embeddings) ? embeddings.vectors : null;
      await this.chunkIndex.replaceDocumentChunks(
        tx,
        { datasetId, datasetSeq: dataset.seq, language: dataset.language, documentId: run.documentId },
        chunks,
        vectors,
      );
      if (vectors && embeddings && dataset.embedding_model === null) {
        await tx.query(`UPDATE datasets SET embedding_model = $2, embedding_dimensions = $3 WHERE id = $1`, [
          datasetId,
          embeddings.model,
          embeddings.dimensions,
        ]);
      }
      const [ready] = await tx.query<{ processing_time_ms: number }[]>(
        `UPDATE documents
            SET status = 'ready', chunks_created = $3, ${PROCESSING_TIME}, progress = NULL, error = NULL
           FROM ${RUN_ENDED}
          WHERE ${STILL_RUNNING}
          RETURNING processing_time_ms`,
        [run.documentId, run.generation, chunks.length],
      );
      return ready.processing_time_ms;
    });
  }

  /**
   * A dataset keeps the vectors of one model: a document embedded by another, or indexed while the
   * dataset is being re-embedded (the command embeds it at the end), is indexed keyword-only.
   */
  private acceptsEmbeddings(
    dataset: { embedding_model: string | null; embedding_dimensions: number | null; reembedding: boolean },
    embeddings: { model: string; dimensions: number },
  ): boolean {
    if (dataset.reembedding) return false;
    if (dataset.embedding_model === null) return true;
    return (
      dataset.embedding_model === embeddings.model && dataset.embedding_dimensions === embeddings.dimensions
    );
  }

  /** Marks a run failed with a code; returns its dataset id, or null when the run was no longer current. */
  async fail(run: Run, error: ProcessingErrorPayload): Promise<string | null> {
    const [rows] = await this.db.query<[{ dataset_id: string }[], number]>(
      `UPDATE documents
          SET status = 'failed', error = $3, ${PROCESSING_TIME}, progress = NULL
         FROM ${RUN_ENDED}
        WHERE ${STILL_RUNNING}
        RETURNING dataset_id`,
      [run.documentId, run.generation, error],
    );
    return rows[0]?.dataset_id ?? null;
  }

  /** Processing documents whose run has not reported for `seconds`. */
  staleRuns(seconds: number, limit: number): Promise<StaleRun[]> {
    return this.db.query<StaleRun[]>(
      `SELECT id, dataset_id AS "datasetId", generation, recoveries
         FROM documents
        WHERE status = 'processing' AND heartbeat_at < now() - make_interval(secs => $1)
        ORDER BY heartbeat_at
        LIMIT $2`,
      [seconds, limit],
    );
  }

  /** Counts a restart of a run whose worker died; false if the run moved on meanwhile. */
  async recordRecovery(run: Run, recoveries: number): Promise<boolean> {
    const [, affected] = await this.db.query<[unknown, number]>(
      `UPDATE documents SET recoveries = $3 + 1, heartbeat_at = now()
        WHERE ${STILL_RUNNING} AND recoveries = $3`,
      [run.documentId, run.generation, recoveries],
    );
    return affected > 0;
  }
}
