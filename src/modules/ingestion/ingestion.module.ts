import { Module } from '@nestjs/common';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { DatasetStoreModule } from 'src/modules/datasets/dataset-store.module.js';
import { DocumentStoreModule } from 'src/modules/documents/document-store.module.js';
import { EmbeddingsModule } from 'src/modules/embeddings/embeddings.module.js';
import { EventsModule } from 'src/modules/events/events.module.js';
import { ExtractionService } from 'src/modules/ingestion/extraction/extraction.service.js';
import { OcrService } from 'src/modules/ingestion/extraction/ocr.service.js';
import { IngestionQueueModule } from 'src/modules/ingestion-queue/ingestion-queue.module.js';
import { IngestionRecoveryService } from 'src/modules/ingestion/ingestion-recovery.service.js';
import { IngestionProcessor } from 'src/modules/ingestion/ingestion.processor.js';
import { IngestionRepository } from 'src/modules/ingestion/ingestion.repository.js';
import { IngestionService } from 'src/modules/ingestion/ingestion.service.js';
import { DatasetIndexService } from 'src/modules/ingestion/dataset-index.service.js';
import { ReembeddingWorker } from 'src/modules/ingestion/reembedding.worker.js';
import { VectorCatchUpService } from 'src/modules/ingestion/vector-catch-up.service.js';

/**
 * The pipeline that processes documents: the queue's processor, extraction (with OCR), chunking and
 * embedding through `EmbeddingsModule`, indexing through `ChunkIndexModule`, the recovery sweep, and
 * the catch-up of chunks indexed keyword-only, the builds of re-embeddings, and the HNSW indexes of
 * large datasets.
 * Imported only where documents are processed: ROLE `all` (default) or `worker`.
 */
@Module({
  imports: [
    ChunkIndexModule,
    DatasetStoreModule,
    DocumentStoreModule,
    EventsModule,
    IngestionQueueModule,
    EmbeddingsModule,
  ],
  providers: [
    IngestionRepository,
    IngestionService,
    IngestionProcessor,
    IngestionRecoveryService,
    ExtractionService,
    OcrService,
    VectorCatchUpService,
    ReembeddingWorker,
    DatasetIndexService,
  ],
})
export class IngestionModule {}
