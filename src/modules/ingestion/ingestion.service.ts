import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import type { ProcessingErrorPayload } from 'src/modules/events/domain-events.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { hasText } from 'src/common/text/extracted-text.js';
import { indexContext, indexedTitle } from 'src/modules/chunk-index/document-context.js';
import { headingPaths } from 'src/modules/embeddings/chunking/chunker.js';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { ExtractionService } from 'src/modules/ingestion/extraction/extraction.service.js';
import { IngestionErrors, PermanentProcessingError } from 'src/modules/ingestion/ingestion.errors.js';
import { DocumentsRepository, type Run } from 'src/modules/documents/documents.repository.js';
import { IngestionRepository } from 'src/modules/ingestion/ingestion.repository.js';
import { DatasetIndexService } from 'src/modules/ingestion/dataset-index.service.js';
import { VectorCatchUpService } from 'src/modules/ingestion/vector-catch-up.service.js';

/** Share of the progress bar at which each stage starts. */
const STAGE_START = { extraction: 5, chunking: 40, embedding: 50, indexing: 95 } as const;

/**
 * The ingestion pipeline, top to bottom: extract → chunk → embed → index. A permanent failure (a
 * corrupt file, no text) marks the document failed with its code and ends the run; anything else is
 * thrown, for Bull to retry with backoff. A run that is no longer current (the document was deleted or
 * reprocessed meanwhile) stops without writing anything.
 */
@Injectable()
export class IngestionService {
  constructor(
    private readonly documents: DocumentsRepository,
    private readonly repository: IngestionRepository,
    private readonly extraction: ExtractionService,
    private readonly embedding: EmbeddingService,
    private readonly catchUp: VectorCatchUpService,
    private readonly datasetIndexes: DatasetIndexService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async process(run: Run): Promise<void> {
    const loaded = await this.documents.loadRun(run);
    if (!loaded) return;
    const { document, content } = loaded;
    try {
      await this.documents.setProgress(run, 'extraction', STAGE_START.extraction);
      const extracted = await this.extraction.extract(document.kind, content);
      if (!hasText(extracted)) throw IngestionErrors.noText(document.kind);

      await this.documents.setProgress(run, 'chunking', STAGE_START.chunking);
      const chunks = await this.embedding.chunk(extracted);
      if (chunks.length === 0) throw IngestionErrors.noText(document.kind);

      const provider = this.embedding.current();
      let embeddings = null;
      if (provider) {
        await this.documents.setProgress(run, 'embedding', STAGE_START.embedding);
        const vectors = await provider.embedPassages(chunks.map((chunk) => chunk.content));
        embeddings = { name: provider.model, dimensions: provider.dimensions, vectors };
      }

      await this.documents.setProgress(run, 'indexing', STAGE_START.indexing);
      const title = indexedTitle(document.metadata, document.filename);
      const paths = headingPaths(extracted, chunks);
      const indexed = chunks.map((chunk, i) => ({ ...chunk, context: indexContext(title, paths[i]) }));
      const elapsed = await this.repository.index(run, document.datasetId, indexed, embeddings);
      // In the background: a dataset grown past the threshold gets a vector index of its own.
      if (elapsed !== null) void this.datasetIndexes.request(document.datasetId);
      // Indexed keyword-only while the model was loading: the catch-up may already have passed by.
      if (!provider && this.embedding.current()) void this.catchUp.request();
    } catch (error) {
      if (!(error instanceof PermanentProcessingError)) throw error;
      await this.fail(run, { code: error.code, message: error.message, details: error.details });
    }
  }

  /** Ends a run as failed: a permanent error, or a transient one that outlived its retries. */
  async fail(run: Run, error: ProcessingErrorPayload): Promise<void> {
    const datasetId = await this.repository.fail(run, error);
    if (!datasetId) return;
    this.logger.info({ document_id: run.documentId, code: error.code }, 'document processing failed');
  }
}
