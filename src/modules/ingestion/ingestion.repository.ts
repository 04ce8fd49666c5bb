import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EventOutbox, type ProcessingErrorPayload } from 'src/modules/events/domain-events.js';
import {
  ChunkIndexRepository,
  ExclusiveLockNeeded,
  type IndexedChunk,
} from 'src/modules/chunk-index/chunk-index.repository.js';
import type { VectorModel } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import { DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';
import { DocumentsRepository, type Run } from 'src/modules/documents/documents.repository.js';

/**
 * A run's chunks, ready to be indexed, with their vectors (one per chunk) when it has them: `embedded`
 * by the model, and `reused` from unchanged chunks of the version the run replaces.
 */
export interface RunChunks {
  run: Run;
  chunks: IndexedChunk[];
  embeddings: (VectorModel & { vectors: number[][]; embedded: number; reused: number }) | null;
}

/**
 * Runs' indexing: their chunks written into the index and their documents made ready, several runs of
 * a dataset in one transaction (the documents' state through `DocumentsRepository`, the index's through
 * `ChunkIndexRepository`).
 */
@Injectable()
export class IngestionRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly chunkIndex: ChunkIndexRepository,
    private readonly datasets: DatasetsRepository,
    private readonly documents: DocumentsRepository,
    private readonly events: EventOutbox,
  ) {}

  /**
   * Writes runs' chunks, vectors and BM25 postings and marks their documents ready, all in one
   * transaction. The dataset's chunk lock is taken first, shared (`ChunkIndexRepository.lockDataset`:
   * the order every writer of a dataset's chunks follows, so they cannot deadlock; exclusive when the
   * runs' vectors are the dataset's first, which decide its model, or when a run replaces a version
   * with chunks), then the documents' rows: a run whose document was deleted, restarted or replaced
   * meanwhile writes nothing. The dataset row itself is
   * written last, so that uploads into the dataset do not wait for the chunks. Chunks of an earlier run
   * are replaced. Returns each run's processing time (see `DocumentsRepository.markReady`), or null
   * when it was no longer current.
   */
  async index(datasetId: string, runs: RunChunks[]): Promise<(number | null)[]> {
    try {
      return await this.write(datasetId, runs, { shared: true });
    } catch (error) {
      // The dataset's first vectors, or a version replaced: written again, under the exclusive lock.
      if (!(error instanceof ExclusiveLockNeeded)) throw error;
      return this.write(datasetId, runs, { shared: false });
    }
  }

  private write(datasetId: string, runs: RunChunks[], lock: { shared: boolean }): Promise<(number | null)[]> {
    return this.db.transaction('READ COMMITTED', async (tx) => {
      // The planner finds a large document's statements costly enough for JIT compilation, which they
      // never repay (docs/ingestion.md).
      await tx.query('SET LOCAL jit = off');
      await this.chunkIndex.lockDataset(tx, datasetId, lock);
      const dataset = await this.datasets.indexTarget(tx, datasetId);
      if (!dataset) return runs.map(() => null);
      const locked = await this.documents.lockRuns(
        tx,
        dataset.seq,
        runs.map(({ run }) => run),
      );
      // Replacing a version deletes its chunks, locking their terms in a pass of its own before the
      // new terms' pass: under the shared lock, two such writers could take shared terms in crossed
      // orders and deadlock. Replacements are written under the exclusive lock.
      if (lock.shared && locked.some((run) => run.hasChunks)) throw new ExclusiveLockNeeded();
      const current = new Map(locked.map((run) => [run.documentId, run.hasChunks]));
      const live = runs.filter(({ run }) => current.has(run.documentId));
      if (live.length === 0) return runs.map(() => null);
      const models = await this.chunkIndex.replaceChunks(
        tx,
        { datasetId, datasetSeq: dataset.seq, language: dataset.language },
        live.map(({ run, chunks, embeddings }) => ({
          documentId: run.documentId,
          chunks,
          embeddings,
          unindexed: !current.get(run.documentId),
        })),
        lock,
      );
      const elapsed = await this.documents.markReady(
        tx,
        dataset.seq,
        live.map(({ run, chunks, embeddings }) => ({
          ...run,
          chunks: chunks.length,
          embedded: embeddings?.embedded ?? null,
          reused: embeddings?.reused ?? null,
        })),
      );
      await this.events.recordMany(
        tx,
        dataset.accountId,
        'document.processed',
        live.map(({ run, chunks }, i) => ({
          document_id: run.documentId,
          dataset_id: datasetId,
          chunks_created: chunks.length,
          processing_time_ms: elapsed.get(run.documentId)!,
          status: 'ready' as const,
          // The model of the document's vectors: none when it was indexed keyword-only.
          embedding_model: models[i],
        })),
      );
      return runs.map(({ run }) => elapsed.get(run.documentId) ?? null);
    });
  }

  /**
   * Ends a run as failed, with its `document.processing_failed` event, in one transaction; the
   * document's dataset, or null when the run had already ended (nothing is recorded then).
   */
  fail(run: Run, error: ProcessingErrorPayload): Promise<string | null> {
    return this.db.transaction('READ COMMITTED', async (tx) => {
      const datasetId = await this.documents.fail(tx, run, error);
      const dataset = datasetId && (await this.datasets.indexTarget(tx, datasetId));
      if (datasetId && dataset) {
        await this.events.record(tx, dataset.accountId, 'document.processing_failed', {
          document_id: run.documentId,
          dataset_id: datasetId,
          error,
        });
      }
      return datasetId;
    });
  }
}
