import { Module } from '@nestjs/common';
import { DatasetsModule } from 'src/modules/datasets/datasets.module.js';
import { DocumentsController } from 'src/modules/documents/documents.controller.js';
import { DocumentsRepository } from 'src/modules/documents/documents.repository.js';
import { DocumentsService } from 'src/modules/documents/documents.service.js';
import { UploadInterceptor } from 'src/modules/documents/upload.interceptor.js';
import { IngestionQueueModule } from 'src/modules/ingestion/ingestion-queue.module.js';

@Module({
  imports: [DatasetsModule, IngestionQueueModule],
  controllers: [DocumentsController],
  providers: [DocumentsService, DocumentsRepository, UploadInterceptor],
})
export class DocumentsModule {}
