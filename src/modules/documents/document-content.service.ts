import { Injectable } from '@nestjs/common';
import { isId } from 'src/common/ids/ids.js';
import type { Page } from 'src/common/pagination/pagination.js';
import type { Principal } from 'src/modules/auth/auth.types.js';
import { pageLength } from 'src/modules/chunk-index/document-text.js';
import {
  type ListedChunk,
  type PageRange,
  PassagesRepository,
} from 'src/modules/chunk-index/passages.repository.js';
import type { DocumentEntity } from 'src/modules/documents/document.entity.js';
import { DocumentErrors } from 'src/modules/documents/documents.errors.js';
import { DocumentsRepository } from 'src/modules/documents/documents.repository.js';
import { DocumentsService } from 'src/modules/documents/documents.service.js';

export interface TextPage {
  documentId: string;
  text: string;
  offset: number;
  nextOffset: number | null;
  totalCharacters: number;
  /** Null for a document without pages or slides. */
  pages: PageRange[] | null;
}

export interface DocumentFile {
  document: DocumentEntity;
  content: Buffer;
}

/**
 * A document read back: its text and its chunks, once it has some in the index, and its original
 * bytes at any time. Each read first finds the document as get-document does, so that what the caller may not
 * read answers as what does not exist.
 */
@Injectable()
export class DocumentContentService {
  constructor(
    private readonly documents: DocumentsService,
    private readonly documentRows: DocumentsRepository,
    private readonly passages: PassagesRepository,
  ) {}

  /**
   * A page of the text: `limit` characters from `offset`, fewer at the end or where the page would end
   * inside a surrogate pair. Read one character long, to see such a pair.
   */
  async text(
    caller: Principal,
    datasetId: string,
    documentId: string,
    offset: number,
    limit: number,
  ): Promise<TextPage> {
    const document = await this.readyDocument(caller, datasetId, documentId);
    const [total, pages] = await Promise.all([
      this.passages.textLength(document.id),
      this.passages.pages(document.id),
    ]);
    if (offset > total) throw DocumentErrors.offsetPastEnd(total);
    const read = await this.passages.span(document.id, offset, Math.min(offset + limit + 1, total));
    const length = pageLength(read, limit);
    const end = offset + length;
    return {
      documentId: document.id,
      text: read.slice(0, length),
      offset,
      nextOffset: end < total ? end : null,
      totalCharacters: total,
      pages: pages.length > 0 ? pages : null,
    };
  }

  /** The chunks in order, `limit` from the `offset`th. */
  async chunks(
    caller: Principal,
    datasetId: string,
    documentId: string,
    offset: number,
    limit: number,
  ): Promise<Page<ListedChunk>> {
    const document = await this.readyDocument(caller, datasetId, documentId);
    return this.passages.listed(document.id, offset, limit);
  }

  /** The chunk with up to `neighbours` on either side, in order; 404 for a chunk not of this document. */
  async chunk(
    caller: Principal,
    datasetId: string,
    documentId: string,
    chunkId: string,
    neighbours: number,
  ): Promise<ListedChunk[]> {
    const document = await this.readyDocument(caller, datasetId, documentId);
    const chunks = isId('chk', chunkId) ? await this.passages.around(document.id, chunkId, neighbours) : null;
    if (!chunks) throw DocumentErrors.chunkNotFound(chunkId);
    return chunks;
  }

  /** The original upload, whatever the document's status: its bytes are stored with its row. */
  async file(caller: Principal, datasetId: string, documentId: string): Promise<DocumentFile> {
    const document = await this.documents.get(caller, datasetId, documentId);
    const content = await this.documentRows.findSource(
      { id: document.datasetId, seq: document.datasetSeq },
      document.id,
    );
    if (!content) throw DocumentErrors.notFound(documentId);
    return { document, content };
  }

  /**
   * A document with chunks in the index: ready, or being replaced (or its replacement failed) while the
   * previous version stays searchable, which is what searches find and so what is read back. One
   * without chunks is processing its first run (or a reprocess), or failed it.
   */
  private async readyDocument(
    caller: Principal,
    datasetId: string,
    documentId: string,
  ): Promise<DocumentEntity> {
    const document = await this.documents.get(caller, datasetId, documentId);
    if (document.chunksCreated !== null) return document;
    switch (document.status) {
      case 'processing':
        throw DocumentErrors.stillProcessing(document.id);
      case 'failed':
        throw DocumentErrors.failed(document.id, document.error);
      case 'ready':
        return document;
    }
  }
}
