import { isDeepStrictEqual } from 'node:util';
import { Injectable } from '@nestjs/common';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { type DomainEventMap, EventOutbox } from 'src/modules/events/domain-events.js';
import { isId, newId } from 'src/common/ids/ids.js';
import type { Page } from 'src/common/pagination/pagination.js';
import { codePointCount, isVisibleText, stringIssue } from 'src/common/validation/json-value.js';
import { patchedMetadata } from 'src/common/validation/metadata.js';
import { TransactionRunner } from 'src/database/transaction.js';
import { type AccountPrincipal, actorOf, type Principal } from 'src/modules/auth/auth.types.js';
import { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import { DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import type { DocumentEntity } from 'src/modules/documents/document.entity.js';
import { DOCUMENT_LIMITS, DocumentErrors } from 'src/modules/documents/documents.errors.js';
import { DocumentsRepository, type NewDocument } from 'src/modules/documents/documents.repository.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import type { ListDocumentsQueryDto, UpdateDocumentDto } from 'src/modules/documents/dto/document.dto.js';
import { type DetectedType, detectFileType } from 'src/modules/documents/file-kinds.js';
import { IngestionQueue } from 'src/modules/ingestion-queue/ingestion.queue.js';

export interface NewUpload {
  /** Null for text sent as JSON. */
  filename: string | null;
  content: Buffer;
  type: DetectedType;
  metadata: Record<string, unknown>;
}

/** The row of an upload's document, as any upload stores it. */
export function newDocument(dataset: Pick<DatasetEntity, 'id' | 'seq'>, upload: NewUpload): NewDocument {
  return {
    id: newId('doc'),
    datasetId: dataset.id,
    datasetSeq: dataset.seq,
    filename: upload.filename,
    kind: upload.type.kind,
    mediaType: upload.type.mediaType,
    sizeBytes: upload.content.length,
    metadata: upload.metadata,
  };
}

/** The `document.uploaded` event of a document just stored. */
export function uploadedEvent(document: DocumentEntity): DomainEventMap['document.uploaded'] {
  return {
    document_id: document.id,
    dataset_id: document.datasetId,
    filename: document.filename,
    size_bytes: document.sizeBytes,
    status: 'processing',
    metadata: document.metadata,
  };
}

/** The longest file name kept, in characters: what common file systems allow. */
const FILENAME_MAX_CHARACTERS = 255;

function filenameIssue(filename: string): string | null {
  const characters = codePointCount(filename);
  if (characters === 0 || characters > FILENAME_MAX_CHARACTERS) {
    return `must be 1-${FILENAME_MAX_CHARACTERS} characters`;
  }
  return stringIssue(filename);
}

@Injectable()
export class DocumentsService {
  constructor(
    private readonly documents: DocumentsRepository,
    private readonly datasets: DatasetsService,
    private readonly datasetsRepository: DatasetsRepository,
    private readonly chunkIndex: ChunkIndexRepository,
    private readonly transactions: TransactionRunner,
    private readonly queue: IngestionQueue,
    private readonly events: EventOutbox,
  ) {}

  /** Text sent as JSON (REST) or as a tool's argument (MCP): checked here, indexed like a .txt file. */
  textUpload(content: string, metadata: Record<string, unknown> = {}): NewUpload {
    if (!isVisibleText(content)) {
      throw CommonErrors.validation([{ field: 'content', issue: 'must contain visible text' }]);
    }
    const characters = codePointCount(content);
    if (characters > DOCUMENT_LIMITS.contentCharacters) throw DocumentErrors.contentTooLarge(characters);
    return {
      filename: null,
      content: Buffer.from(content, 'utf8'),
      type: { kind: 'text', mediaType: 'text/plain' },
      metadata,
    };
  }

  /** A file: its type decided from its content and its name (415 for anything unsupported). */
  async fileUpload(
    filename: string,
    content: Buffer,
    metadata: Record<string, unknown> = {},
    declaredType?: string,
  ): Promise<NewUpload> {
    const issue = filenameIssue(filename);
    if (issue) throw CommonErrors.validation([{ field: 'file', issue: `name ${issue}` }]);
    const detection = await detectFileType(filename, content, declaredType);
    if (!detection.ok) throw DocumentErrors.unsupportedFileType(detection.reason, detection.detectedType);
    return { filename, content, type: detection.type, metadata };
  }

  /**
   * Stores the document and its bytes and counts it in its dataset, in one transaction under the
   * dataset row's lock (so the count stays exact and the per-dataset limit holds under concurrent
   * uploads), then queues its processing. Not under the dataset's chunk lock: an upload does not wait
   * for a document's chunks being written.
   */
  async upload(caller: AccountPrincipal, datasetId: string, upload: NewUpload): Promise<DocumentEntity> {
    const document = await this.transactions.run(async (tx) => {
      const dataset = await this.datasets.findOwnedForUpdate(tx, caller, datasetId);
      if (dataset.documentCount >= DOCUMENT_LIMITS.perDataset) throw DocumentErrors.limitReached();
      const created = await this.documents.insert(tx, newDocument(dataset, upload), upload.content);
      await this.datasetsRepository.adjustDocumentCount(tx, dataset.id, 1);
      await this.events.record(tx, dataset.accountId, 'document.uploaded', uploadedEvent(created));
      return created;
    });
    await this.queue.enqueue(document);
    return document;
  }

  async list(
    caller: Principal,
    datasetId: string,
    query: ListDocumentsQueryDto,
  ): Promise<Page<DocumentEntity>> {
    const dataset = await this.datasets.get(caller, datasetId);
    return this.documents.list(dataset.id, query.status, query.limit, query.offset);
  }

  async get(caller: Principal, datasetId: string, documentId: string): Promise<DocumentEntity> {
    const dataset = await this.datasets.get(caller, datasetId);
    const document = isId('doc', documentId) ? await this.documents.find(dataset, documentId) : null;
    if (!document) throw DocumentErrors.notFound(documentId);
    return document;
  }

  /**
   * Changes the document's metadata in place, merged as a dataset's is (`patchedMetadata`), with a
   * `document.updated` event when it changed; its status, chunks and vectors stay, and a run under way
   * goes on (its end writes no metadata). Search filters read the documents' metadata, so they see the
   * change at once; the title the chunks were indexed with stays until the document is reprocessed.
   * Only the document's row is locked, as indexing locks it (before it writes the dataset's row): a
   * change waits for the indexing of its own document, and takes no lock indexing could wait on.
   */
  async update(
    caller: AccountPrincipal,
    datasetId: string,
    documentId: string,
    input: UpdateDocumentDto,
  ): Promise<DocumentEntity> {
    const dataset = await this.datasets.getOwned(caller, datasetId);
    return this.transactions.run(async (tx) => {
      const document = isId('doc', documentId)
        ? await this.documents.findForUpdate(tx, dataset, documentId)
        : null;
      if (!document) throw DocumentErrors.notFound(documentId);
      if (input.metadata === undefined) return document;
      const metadata = patchedMetadata(document.metadata, input.metadata);
      if (isDeepStrictEqual(metadata, document.metadata)) return document;
      const updated = await this.documents.setMetadata(tx, document, metadata);
      await this.events.record(tx, dataset.accountId, 'document.updated', {
        document_id: document.id,
        dataset_id: dataset.id,
        changes: { metadata: updated.metadata },
        updated_by: actorOf(caller),
      });
      return updated;
    });
  }

  /**
   * Replaces the document's file or text with a new version, in place (PUT): its id stays, and so does
   * its metadata unless `metadata` is given, which then replaces it whole. It goes to processing in a
   * new run, and a run under way gives way (it finds itself no longer current and writes nothing). The
   * chunks of the version searched stay searchable until the new run indexes its own, in the one
   * transaction that removes them (`ChunkIndexRepository.replaceChunks`), and stay if the run fails;
   * its unchanged chunks keep their vectors (`IngestionService`). Only the document's row is locked, as
   * `update` locks it.
   */
  async replace(
    caller: AccountPrincipal,
    datasetId: string,
    documentId: string,
    upload: NewUpload,
    { keepMetadata }: { keepMetadata: boolean },
  ): Promise<DocumentEntity> {
    const dataset = await this.datasets.getOwned(caller, datasetId);
    const document = await this.transactions.run(async (tx) => {
      const current = isId('doc', documentId)
        ? await this.documents.findForUpdate(tx, dataset, documentId)
        : null;
      if (!current) throw DocumentErrors.notFound(documentId);
      const { filename, kind, mediaType, sizeBytes } = newDocument(dataset, upload);
      const version = {
        filename,
        kind,
        mediaType,
        sizeBytes,
        ...(keepMetadata ? {} : { metadata: upload.metadata }),
      };
      const replaced = await this.documents.replace(tx, current, version, upload.content);
      const metadataChanged = !isDeepStrictEqual(replaced.metadata, current.metadata);
      await this.events.record(tx, dataset.accountId, 'document.updated', {
        document_id: replaced.id,
        dataset_id: dataset.id,
        changes: {
          ...(metadataChanged ? { metadata: replaced.metadata } : {}),
          content: { filename: replaced.filename, size_bytes: replaced.sizeBytes, status: 'processing' },
        },
        updated_by: actorOf(caller),
      });
      return replaced;
    });
    await this.queue.enqueue(document);
    return document;
  }

  /**
   * Deletes the document with its chunks and embeddings in one transaction, and takes it out of the
   * dataset's counts. A job still running for it finds it gone and writes nothing.
   */
  async delete(caller: AccountPrincipal, datasetId: string, documentId: string): Promise<void> {
    await this.transactions.run(async (tx) => {
      const dataset = await this.datasets.findOwnedForChunkChanges(tx, caller, datasetId);
      const document = isId('doc', documentId)
        ? await this.documents.findForUpdate(tx, dataset, documentId)
        : null;
      if (!document) throw DocumentErrors.notFound(documentId);
      await this.chunkIndex.removeDocumentChunks(tx, dataset.seq, document.id);
      await this.documents.delete(tx, document);
      await this.datasetsRepository.adjustDocumentCount(tx, dataset.id, -1);
      await this.events.record(tx, dataset.accountId, 'document.deleted', {
        document_id: document.id,
        dataset_id: dataset.id,
        deleted_by: actorOf(caller),
      });
    });
  }

  /**
   * Runs the pipeline again from the stored bytes, for a ready or failed document. A run under way is
   * refused first from a read without locks: its indexing holds the dataset's chunk lock for as long as
   * it writes (seconds for a large file), and a reprocess that waited for the lock would find the run
   * just ended and start it again. The status is read again under the locks, which decide: another
   * reprocess may have restarted the document in between.
   */
  async reprocess(caller: AccountPrincipal, datasetId: string, documentId: string): Promise<DocumentEntity> {
    const dataset = await this.datasets.getOwned(caller, datasetId);
    const seen = isId('doc', documentId) ? await this.documents.find(dataset, documentId) : null;
    if (!seen) throw DocumentErrors.notFound(documentId);
    if (seen.status === 'processing') throw DocumentErrors.stillProcessing(documentId);
    const document = await this.transactions.run(async (tx) => {
      const dataset = await this.datasets.findOwnedForChunkChanges(tx, caller, datasetId);
      const current = isId('doc', documentId)
        ? await this.documents.findForUpdate(tx, dataset, documentId)
        : null;
      if (!current) throw DocumentErrors.notFound(documentId);
      if (current.status === 'processing') throw DocumentErrors.stillProcessing(documentId);
      // The old chunks go now, with their share of the BM25 statistics: they must not count while the
      // document is not searchable, nor stay counted if the new run fails.
      await this.chunkIndex.removeDocumentChunks(tx, dataset.seq, current.id);
      return this.documents.restart(tx, current);
    });
    await this.queue.enqueue(document);
    return document;
  }
}
