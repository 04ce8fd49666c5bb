import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity.js';
import type { Page } from 'src/common/pagination/pagination.js';
import { pagedQuery } from 'src/database/paged-query.js';
import type { Tx } from 'src/database/transaction.js';
import {
  DocumentEntity,
  type DocumentStatus,
  DocumentSourceEntity,
} from 'src/modules/documents/document.entity.js';

export type NewDocument = Pick<
  DocumentEntity,
  'id' | 'datasetId' | 'filename' | 'kind' | 'mediaType' | 'sizeBytes' | 'metadata'
>;

@Injectable()
export class DocumentsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insert(tx: Tx, document: NewDocument, content: Buffer): Promise<DocumentEntity> {
    const documents = tx.getRepository(DocumentEntity);
    await documents.insert({
      ...document,
      status: 'processing',
      progress: { stage: 'upload', percent: 0 },
    } as QueryDeepPartialEntity<DocumentEntity>);
    await tx.getRepository(DocumentSourceEntity).insert({ documentId: document.id, content });
    return documents.findOneByOrFail({ id: document.id });
  }

  find(datasetId: string, documentId: string): Promise<DocumentEntity | null> {
    return this.db.getRepository(DocumentEntity).findOneBy({ id: documentId, datasetId });
  }

  findForUpdate(tx: Tx, datasetId: string, documentId: string): Promise<DocumentEntity | null> {
    return tx
      .getRepository(DocumentEntity)
      .createQueryBuilder('d')
      .setLock('pessimistic_write')
      .where('d.id = :documentId AND d.dataset_id = :datasetId', { documentId, datasetId })
      .getOne();
  }

  async list(
    datasetId: string,
    status: DocumentStatus | undefined,
    limit: number,
    offset: number,
  ): Promise<Page<DocumentEntity>> {
    const query = this.db
      .getRepository(DocumentEntity)
      .createQueryBuilder('d')
      .where('d.dataset_id = :datasetId', { datasetId });
    if (status) query.andWhere('d.status = :status', { status });
    return pagedQuery(query, { 'd.created_at': 'DESC', 'd.id': 'DESC' }, limit, offset);
  }

  /** Deletes the document and its source; its chunks must have gone first (`ChunkIndexRepository`). */
  async delete(tx: Tx, document: DocumentEntity): Promise<void> {
    await tx.getRepository(DocumentEntity).delete({ id: document.id, datasetId: document.datasetId });
  }

  /** Back to processing for another run. */
  async restart(tx: Tx, document: DocumentEntity): Promise<DocumentEntity> {
    const documents = tx.getRepository(DocumentEntity);
    await documents.update(
      { id: document.id },
      {
        status: 'processing',
        generation: document.generation + 1,
        recoveries: 0,
        error: null,
        progress: { stage: 'upload', percent: 0 },
        processingStartedAt: () => 'now()',
        heartbeatAt: () => 'now()',
        processedAt: null,
        processingTimeMs: null,
      },
    );
    return documents.findOneByOrFail({ id: document.id });
  }
}
