import { Module } from '@nestjs/common';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { DatasetsModule } from 'src/modules/datasets/datasets.module.js';
import { DocumentStoreModule } from 'src/modules/documents/document-store.module.js';
import { DocumentsModule } from 'src/modules/documents/documents.module.js';
import { EmbeddingsModule } from 'src/modules/embeddings/embeddings.module.js';
import { EventsModule } from 'src/modules/events/events.module.js';
import { IngestionQueueModule } from 'src/modules/ingestion-queue/ingestion-queue.module.js';
import { DatasetExportService } from 'src/modules/transfer/dataset-export.service.js';
import { DatasetImportService } from 'src/modules/transfer/dataset-import.service.js';
import { DatasetTransferController } from 'src/modules/transfer/dataset-transfer.controller.js';

/**
 * A dataset taken out whole as one archive and brought into a new dataset (docs/export-format.md):
 * the documents' rows through their store, chunks, postings and vectors through the index's writes.
 */
@Module({
  imports: [
    ChunkIndexModule,
    DatasetsModule,
    DocumentStoreModule,
    DocumentsModule,
    EmbeddingsModule,
    EventsModule,
    IngestionQueueModule,
  ],
  controllers: [DatasetTransferController],
  providers: [DatasetExportService, DatasetImportService],
})
export class DatasetTransferModule {}
