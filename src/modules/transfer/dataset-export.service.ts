import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { TransactionRunner, type Tx } from 'src/database/transaction.js';
import type { Principal } from 'src/modules/auth/auth.types.js';
import { ChunkExportRepository } from 'src/modules/chunk-index/chunk-export.repository.js';
import { FusionChoiceRepository } from 'src/modules/chunk-index/fusion-choice.repository.js';
import { IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import type { DocumentEntity } from 'src/modules/documents/document.entity.js';
import { DocumentsRepository } from 'src/modules/documents/documents.repository.js';
import {
  ARCHIVE_FORMAT,
  ARCHIVE_VERSION,
  type ArchiveRecord,
  type EmbeddingModelRecord,
  type FusionRecord,
  recordLine,
} from 'src/modules/transfer/archive-format.js';
import { chunkContexts, needsText } from 'src/modules/transfer/chunk-context.js';

/** Documents read a statement (their metadata, not their bytes, which are read one by one). */
const DOCUMENT_PAGE = 100;
/** Chunks read a statement, with their vectors: about 2 MB of rows at 384 dimensions. */
const CHUNK_PAGE = 1_000;

/** Where an export's records go: `write` resolves once the bytes may be followed by more. */
export interface ArchiveSink {
  write(bytes: Buffer): Promise<void>;
  /** Sends what is buffered now (after the manifest: the client's first bytes come at once). */
  flush(): void;
}

/**
 * `GET /v1/datasets/{id}/export`: the dataset's archive (docs/export-format.md), written as it is
 * read from one snapshot (a repeatable-read transaction), a page of documents and of chunks at a time,
 * so that memory stays that of a page whatever the dataset's size, and what comes out is one state.
 */
@Injectable()
export class DatasetExportService {
  constructor(
    private readonly datasets: DatasetsService,
    private readonly documents: DocumentsRepository,
    private readonly chunks: ChunkExportRepository,
    private readonly indexState: IndexStateRepository,
    private readonly fusion: FusionChoiceRepository,
    private readonly transactions: TransactionRunner,
  ) {}

  /** The dataset the caller may read (404 otherwise), checked before anything is sent. */
  readable(caller: Principal, datasetId: string): Promise<DatasetEntity> {
    return this.datasets.get(caller, datasetId);
  }

  /** Writes the dataset's whole archive into `sink`, in the order the format has its records. */
  write(dataset: DatasetEntity, sink: ArchiveSink): Promise<void> {
    return this.transactions.snapshot(async (tx) => {
      const send = (record: ArchiveRecord) => sink.write(recordLine(record));
      const state = await this.indexState.of((text, values) => tx.query(text, values), dataset.id);
      const documentCount = await this.documents.countIn(tx, dataset.id);
      const embedding: EmbeddingModelRecord | null =
        state.embeddingModel !== null && state.embeddingDimensions !== null
          ? { model: state.embeddingModel, dimensions: state.embeddingDimensions }
          : null;
      await send({
        type: 'manifest',
        format: ARCHIVE_FORMAT,
        version: ARCHIVE_VERSION,
        exported_at: new Date().toISOString(),
        source: { dataset_id: dataset.id },
        embedding,
        counts: { documents: documentCount, chunks: state.chunkCount },
      });
      sink.flush();
      await send({
        type: 'dataset',
        name: dataset.name,
        description: dataset.description,
        is_public: dataset.isPublic,
        metadata: dataset.metadata,
        language: dataset.language,
        fusion: await this.fusionOf(dataset),
      });
      let documents = 0;
      let chunks = 0;
      for (let after = ''; ;) {
        const page = await this.documents.pageInOrder(tx, dataset.id, after, DOCUMENT_PAGE);
        if (page.length === 0) break;
        after = page[page.length - 1].id;
        for (const document of page) {
          chunks += await this.writeDocument(tx, document, embedding !== null, send);
          documents += 1;
        }
      }
      await send({ type: 'end', documents, chunks });
    });
  }

  private async fusionOf(dataset: DatasetEntity): Promise<FusionRecord | null> {
    const choice = (await this.fusion.ofDatasets([dataset.seq])).get(dataset.seq);
    if (!choice) return null;
    return {
      keyword_weight: choice.keywordWeight,
      semantic_weight: choice.semanticWeight,
      embedding_model: choice.embeddingModel,
      chunk_count: choice.chunkCount,
      pseudo_queries: choice.pseudoQueries,
      evidence: choice.evidence,
    };
  }

  /** A document's record with its bytes, then its chunks; returns how many chunks it had. */
  private async writeDocument(
    tx: Tx,
    document: DocumentEntity,
    vectors: boolean,
    send: (record: ArchiveRecord) => Promise<void>,
  ): Promise<number> {
    const content = (await this.documents.sourceIn(tx, document)) ?? Buffer.alloc(0);
    // The chunks in the index are a whole version: a ready document's, or the one a replacement
    // under way (or failed) left searchable. A run under way is imported to run again.
    const indexed = document.chunksCreated !== null;
    const count = indexed ? await this.chunks.countOfDocument(tx, document.id) : 0;
    await send({
      type: 'document',
      id: document.id,
      filename: document.filename,
      kind: document.kind,
      media_type: document.mediaType,
      size_bytes: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
      metadata: document.metadata,
      status: document.status,
      error: document.status === 'failed' ? document.error : null,
      chunks: count,
      content_base64: content.toString('base64'),
    });
    if (count === 0) return 0;
    const contextOf = chunkContexts(
      document,
      needsText(document) ? await this.chunks.spansOfDocument(tx, document.id) : [],
    );
    let written = 0;
    for (let after = -1; ;) {
      const page = await this.chunks.pageOfDocument(tx, document.id, after, CHUNK_PAGE, { vectors });
      if (page.length === 0) break;
      after = page[page.length - 1].ordinal;
      for (const chunk of page) {
        await send({
          type: 'chunk',
          document_id: document.id,
          ordinal: chunk.ordinal,
          content: chunk.content,
          token_count: chunk.tokenCount,
          page: chunk.page,
          char_start: chunk.charStart,
          char_end: chunk.charEnd,
          context: contextOf(chunk.ordinal),
          vector: chunk.vector ? chunk.vector.toString('base64') : null,
        });
        written += 1;
      }
    }
    return written;
  }
}
