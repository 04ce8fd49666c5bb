import { BullModule } from '@nestjs/bull';
import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { APP_CONFIG, type AppConfig, type Role } from 'src/config/app-config.js';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { VectorIndexRepository } from 'src/modules/embeddings/vector-index.repository.js';
import { ExtractionService } from 'src/modules/ingestion/extraction/extraction.service.js';
import { OcrService } from 'src/modules/ingestion/extraction/ocr.service.js';
import { IngestionRecoveryService } from 'src/modules/ingestion/ingestion-recovery.service.js';
import { IngestionProcessor } from 'src/modules/ingestion/ingestion.processor.js';
import { IngestionQueue, QueueName } from 'src/modules/ingestion/ingestion.queue.js';
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
      global: true,
      imports: [
        BullModule.forRootAsync({
          inject: [APP_CONFIG],
          useFactory: (config: AppConfig) => ({
            url: config.redisUrl,
            prefix: `${config.redisPrefix}:bull`,
            // A killed worker's job is noticed within 1.5 lock periods and run again (twice at most).
            settings: {
              lockDuration: config.ingestion.lockSeconds * 1000,
              stalledInterval: config.ingestion.lockSeconds * 500,
              maxStalledCount: 2,
            },
          }),
        }),
        BullModule.registerQueue({ name: QueueName.Ingestion }),
      ],
      providers: [
        IngestionQueue,
        IngestionRepository,
        EmbeddingService,
        VectorIndexRepository,
        ...workerProviders,
      ],
      exports: [IngestionQueue, EmbeddingService],
    };
  }
}
