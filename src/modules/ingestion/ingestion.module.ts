import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import type { Role } from 'src/config/app-config.js';
import { EmbeddingsModule } from 'src/modules/embeddings/embeddings.module.js';
import { ExtractionService } from 'src/modules/ingestion/extraction/extraction.service.js';
import { OcrService } from 'src/modules/ingestion/extraction/ocr.service.js';
import { IngestionQueueModule } from 'src/modules/ingestion/ingestion-queue.module.js';
import { IngestionRecoveryService } from 'src/modules/ingestion/ingestion-recovery.service.js';
import { IngestionProcessor } from 'src/modules/ingestion/ingestion.processor.js';
import { IngestionRepository } from 'src/modules/ingestion/ingestion.repository.js';
import { IngestionService } from 'src/modules/ingestion/ingestion.service.js';

/**
 * The ingestion queue for every role, and the pipeline (processor, extraction, OCR, recovery sweep)
 * only where documents are processed: ROLE `all` (default) or `worker`.
 */
@Module({})
export class IngestionModule {
  static forRoot(role: Role): DynamicModule {
    const processing = role !== 'api';
    const workerProviders: Provider[] = processing
      ? [IngestionService, IngestionProcessor, IngestionRecoveryService, ExtractionService, OcrService]
      : [];
    return {
      module: IngestionModule,
      imports: [ChunkIndexModule, IngestionQueueModule, EmbeddingsModule],
      providers: [IngestionRepository, ...workerProviders],
    };
  }
}
