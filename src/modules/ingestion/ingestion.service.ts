import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import type { ProcessingErrorPayload } from 'src/modules/events/domain-events.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { hasText } from 'src/common/text/extracted-text.js';
import { ChunkVectorsRepository } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import { indexContext, indexedTitle } from 'src/modules/chunk-index/document-context.js';
import type { DocumentEntity } from 'src/modules/documents/document.entity.js';
import type { Chunk } from 'src/modules/embeddings/chunking/chunker.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import { headingPaths } from 'src/modules/embeddings/chunking/chunker.js';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { ExtractionService } from 'src/modules/ingestion/extraction/extraction.service.js';
import { IngestionErrors, PermanentProcessingError } from 'src/modules/ingestion/ingestion.errors.js';
import { DocumentsRepository, type Run } from 'src/modules/documents/documents.repository.js';
import { IngestionRepository, type RunChunks } from 'src/modules/ingestion/ingestion.repository.js';
import { KeyedBatcher } from 'src/common/async/keyed-batcher.js';
import { ProgressReporter } from 'src/modules/ingestion/progress-reporter.js';
import { DatasetIndexService } from 'src/modules/ingestion/dataset-index.service.js';
import { VectorCatchUpService } from 'src/modules/ingestion/vector-catch-up.service.js';

/** Share of the progress bar at which each stage starts. */
const STAGE_START = { extraction: 5, chunking: 40, embedding: 50, indexing: 95 } as const;

/**
 * What one indexing transaction takes at most: the runs of a dataset that reach indexing while a
 * process's transactions into it are under way go together (docs/ingestion.md, Indexing), up to this
 * many documents and chunks; a process runs up to `perDataset` such transactions into a dataset at once.
 */
const INDEX_BATCH = { documents: 64, chunks: 5_000, perDataset: 2 } as const;

/** A run's progress is written at most this often (`ProgressReporter`). */
const PROGRESS_INTERVAL_MS = 1_000;

/**
 * The ingestion pipeline, top to bottom: extract → chunk → embed → index. A permanent failure (a
 * corrupt file, no text) marks the document failed with its code and ends the run; anything else is
 * thrown, for Bull to retry with backoff. A run that is no longer current (the document was deleted or
 * reprocessed meanwhile) stops without writing anything.
 */
@Injectable()
export class IngestionService {
  private readonly indexing = new KeyedBatcher<RunChunks, number | null>(
    (datasetId, runs) => this.indexTogether(datasetId, runs),
    {
      items: INDEX_BATCH.documents,
      weight: INDEX_BATCH.chunks,
      weigh: (run) => run.chunks.length,
      perKey: INDEX_BATCH.perDataset,
    },
  );

  private readonly progressReporter: ProgressReporter;

  constructor(
    private readonly documents: DocumentsRepository,
    private readonly repository: IngestionRepository,
    private readonly extraction: ExtractionService,
    private readonly embedding: EmbeddingService,
    private readonly chunkVectors: ChunkVectorsRepository,
    private readonly catchUp: VectorCatchUpService,
    private readonly datasetIndexes: DatasetIndexService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.progressReporter = new ProgressReporter(
      (updates) => this.documents.setProgress(updates),
      PROGRESS_INTERVAL_MS,
      logger,
    );
  }

  async process(run: Run): Promise<void> {
    const loaded = await this.documents.loadRun(run);
    if (!loaded) return;
    const { document, content } = loaded;
    try {
      await this.progress(run, 'extraction');
      const extracted = await this.extraction.extract(document.kind, content);
      if (!hasText(extracted)) throw IngestionErrors.noText(document.kind);

      await this.progress(run, 'chunking');
      const chunks = await this.embedding.chunk(extracted);
      if (chunks.length === 0) throw IngestionErrors.noText(document.kind);

      const provider = this.embedding.current();
      let embeddings = null;
      if (provider) {
        await this.progress(run, 'embedding');
        embeddings = {
          name: provider.model,
          dimensions: provider.dimensions,
          ...(await this.vectorsOf(run.datasetSeq, document, chunks, provider)),
        };
      }

      await this.progress(run, 'indexing');
      const title = indexedTitle(document.metadata, document.filename);
      const paths = headingPaths(extracted, chunks);
      const indexed = chunks.map((chunk, i) => ({ ...chunk, context: indexContext(title, paths[i]) }));
      const elapsed = await this.indexing.submit(document.datasetId, { run, chunks: indexed, embeddings });
      // In the background: a dataset grown past the threshold gets a vector index of its own.
      if (elapsed !== null) void this.datasetIndexes.request(run.datasetSeq);
      // Indexed keyword-only while the model was loading: the catch-up may already have passed by.
      if (!provider && this.embedding.current()) void this.catchUp.request();
    } catch (error) {
      if (!(error instanceof PermanentProcessingError)) throw error;
      await this.fail(run, { code: error.code, message: error.message, details: error.details });
    } finally {
      this.progressReporter.end(run);
    }
  }

  /**
   * The chunks' vectors, in their order: a chunk whose content a chunk of the version searched holds
   * (a document replaced in place) keeps that chunk's vector when it is of the provider's model; the
   * others are embedded.
   */
  private async vectorsOf(
    datasetSeq: string,
    document: Pick<DocumentEntity, 'id' | 'chunksCreated'>,
    chunks: Chunk[],
    provider: EmbeddingProvider,
  ): Promise<{ vectors: number[][]; embedded: number; reused: number }> {
    const hashes = chunks.map(({ content }) => createHash('sha256').update(content, 'utf8').digest('hex'));
    const kept = !document.chunksCreated
      ? new Map<string, number[]>()
      : await this.chunkVectors.reusableVectors(
          datasetSeq,
          document.id,
          document.chunksCreated,
          { name: provider.model, dimensions: provider.dimensions },
          [...new Set(hashes)],
        );
    const pending = chunks.filter((_, i) => !kept.has(hashes[i]));
    const fresh =
      pending.length > 0 ? await provider.embedPassages(pending.map(({ content }) => content)) : [];
    let next = 0;
    const vectors = hashes.map((hash) => kept.get(hash) ?? fresh[next++]);
    return { vectors, embedded: pending.length, reused: chunks.length - pending.length };
  }

  /**
   * Indexing is shown at once: it may wait for the dataset's chunk lock, and a write left for later
   * would find the document's row locked by the run's own transaction, and skip it.
   */
  private async progress(run: Run, stage: keyof typeof STAGE_START): Promise<void> {
    await this.progressReporter.report(
      { ...run, stage, percent: STAGE_START[stage] },
      { now: stage === 'indexing' },
    );
  }

  /**
   * Indexes runs of one dataset in one transaction; when it fails, each run alone, so that one run's
   * failure (its own transient error, retried by its job) is not the others'.
   */
  private async indexTogether(
    datasetId: string,
    runs: RunChunks[],
  ): Promise<PromiseSettledResult<number | null>[]> {
    try {
      const elapsed = await this.repository.index(datasetId, runs);
      return elapsed.map((value) => ({ status: 'fulfilled', value }));
    } catch (error) {
      if (runs.length === 1) return [{ status: 'rejected', reason: error }];
      this.logger.warn(
        { err: error, dataset_id: datasetId, runs: runs.length },
        'indexing runs together failed; each alone',
      );
    }
    const outcomes: PromiseSettledResult<number | null>[] = [];
    for (const run of runs) {
      try {
        const [value] = await this.repository.index(datasetId, [run]);
        outcomes.push({ status: 'fulfilled', value });
      } catch (reason) {
        outcomes.push({ status: 'rejected', reason });
      }
    }
    return outcomes;
  }

  /** Ends a run as failed: a permanent error, or a transient one that outlived its retries. */
  async fail(run: Run, error: ProcessingErrorPayload): Promise<void> {
    const datasetId = await this.repository.fail(run, error);
    if (!datasetId) return;
    this.logger.info({ document_id: run.documentId, code: error.code }, 'document processing failed');
  }
}
