import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DocumentEntity, DocumentSourceEntity } from 'src/modules/documents/document.entity.js';
import { DocumentsRepository } from 'src/modules/documents/documents.repository.js';

/**
 * Documents' rows and statuses without their HTTP resource: for the processing roles, whose pipeline
 * changes a document's status and serves no route (a worker builds no controller).
 */
@Module({
  imports: [TypeOrmModule.forFeature([DocumentEntity, DocumentSourceEntity])],
  providers: [DocumentsRepository],
  exports: [DocumentsRepository],
})
export class DocumentStoreModule {}
