import { Module } from '@nestjs/common';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { DatasetsModule } from 'src/modules/datasets/datasets.module.js';
import { BulkUploadController } from 'src/modules/documents/bulk-upload.controller.js';
import { BulkUploadService } from 'src/modules/documents/bulk-upload.service.js';
import { DocumentsController } from 'src/modules/documents/documents.controller.js';
import { DocumentStoreModule } from 'src/modules/documents/document-store.module.js';
import { EventsModule } from 'src/modules/events/events.module.js';
import { DocumentsService } from 'src/modules/documents/documents.service.js';
import { UploadInterceptor } from 'src/modules/documents/upload.interceptor.js';
import { IngestionQueueModule } from 'src/modules/ingestion-queue/ingestion-queue.module.js';

@Module({
  imports: [ChunkIndexModule, DatasetsModule, DocumentStoreModule, EventsModule, IngestionQueueModule],
  controllers: [DocumentsController, BulkUploadController],
  providers: [DocumentsService, BulkUploadService, UploadInterceptor],
  exports: [DocumentsService],
})
export class DocumentsModule {}
