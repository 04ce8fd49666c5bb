import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EventOutbox, type ProcessingErrorPayload } from 'src/modules/events/domain-events.js';
import { ChunkIndexRepository, type IndexedChunk } from 'src/modules/chunk-index/chunk-index.repository.js';
import type { VectorModel } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import { DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';
import { DocumentsRepository, type Run } from 'src/modules/documents/documents.repository.js';

/**
 * A run's indexing: its chunks written into the index and its document made ready, in one transaction
 * (the document's state through `DocumentsRepository`, the index's through `ChunkIndexRepository`).
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
   * Writes a run's chunks, vectors and BM25 postings and marks the document ready, in one transaction.
   * The dataset's chunk lock is taken first (`ChunkIndexRepository.lockDataset`: the order every writer
   * of a dataset's chunks follows, so they cannot deadlock), then the document's row: if it was deleted
   * or restarted meanwhile, nothing is written. The dataset row itself is written last, so that uploads
   * into the dataset do not wait for the chunks. Chunks of an earlier run are replaced.
   * Returns the run's processing time (see `DocumentsRepository.markReady`), or null when the run was no longer
   * current.
   */
  async index(
    run: Run,
    datasetId: string,
    chunks: IndexedChunk[],
    embeddings: (VectorModel & { vectors: number[][] }) | null,
  ): Promise<number | null> {
    return this.db.transaction('READ COMMITTED', async (tx) => {
      // The planner finds a large document's statements costly enough for JIT compilation, which they
      // never repay (docs/ingestion.md).
      await tx.query('SET LOCAL jit = off');
      await this.chunkIndex.lockDataset(tx, datasetId);
      const dataset = await this.datasets.indexTarget(tx, datasetId);
      if (!dataset) return null;
      if (!(await this.documents.lockRun(tx, run))) return null;
      const model = await this.chunkIndex.replaceDocumentChunks(
        tx,
        { datasetId, datasetSeq: dataset.seq, language: dataset.language, documentId: run.documentId },
        chunks,
        embeddings,
      );
      const elapsed = await this.documents.markReady(tx, run, chunks.length);
      if (elapsed === null) return null;
      await this.events.record(tx, dataset.accountId, 'document.processed', {
        document_id: run.documentId,
        dataset_id: datasetId,
        chunks_created: chunks.length,
        processing_time_ms: elapsed,
        status: 'ready',
        // The model of the document's vectors: none when it was indexed keyword-only.
        embedding_model: model,
      });
      return elapsed;
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
