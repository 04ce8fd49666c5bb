import { Module } from '@nestjs/common';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { DatasetsModule } from 'src/modules/datasets/datasets.module.js';
import { BulkUploadController } from 'src/modules/documents/bulk-upload.controller.js';
import { BulkUploadService } from 'src/modules/documents/bulk-upload.service.js';
import { DocumentContentController } from 'src/modules/documents/document-content.controller.js';
import { DocumentContentService } from 'src/modules/documents/document-content.service.js';
import { DocumentsController } from 'src/modules/documents/documents.controller.js';
import { DocumentStoreModule } from 'src/modules/documents/document-store.module.js';
import { EventsModule } from 'src/modules/events/events.module.js';
import { DocumentsService } from 'src/modules/documents/documents.service.js';
import { UploadInterceptor } from 'src/modules/documents/upload.interceptor.js';
import { IngestionQueueModule } from 'src/modules/ingestion-queue/ingestion-queue.module.js';

@Module({
  imports: [ChunkIndexModule, DatasetsModule, DocumentStoreModule, EventsModule, IngestionQueueModule],
  controllers: [DocumentsController, DocumentContentController, BulkUploadController],
  providers: [DocumentsService, DocumentContentService, BulkUploadService, UploadInterceptor],
  exports: [DocumentsService],
})
export class DocumentsModule {}
