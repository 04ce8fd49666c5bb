import { createHash } from 'node:crypto';
import { AppError } from 'src/common/errors/app-error.js';
import { metadataIssue } from 'src/common/validation/metadata.js';
import type { Tx } from 'src/database/transaction.js';
import type { ChunkIndexRepository, DocumentChunks } from 'src/modules/chunk-index/chunk-index.repository.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { DOCUMENT_LIMITS } from 'src/modules/documents/documents.errors.js';
import type { DocumentsRepository, NewDocument, Run } from 'src/modules/documents/documents.repository.js';
import {
  type DocumentsService,
  newDocument,
  type NewUpload,
} from 'src/modules/documents/documents.service.js';
import type { QueuedRun } from 'src/modules/ingestion-queue/ingestion.queue.js';
import {
  type ChunkRecord,
  decodeVector,
  type DocumentRecord,
  type ManifestRecord,
  strictBase64,
} from 'src/modules/transfer/archive-format.js';
import type { NumberedRecord } from 'src/modules/transfer/archive-reader.js';
import { type ArchivePlace, TransferErrors } from 'src/modules/transfer/transfer.errors.js';

/** Chunks written a statement group, and documents (or their bytes) inserted a statement. */
const CHUNK_BATCH = 1_000;
const DOCUMENT_BATCH = 100;
const DOCUMENT_BATCH_BYTES = 16 * 1024 * 1024;

export interface ImportTotals {
  documents: number;
  chunks: number;
  /** Chunks written without a vector: the archive had none for them, or of another model. */
  chunksWithoutVector: number;
}

/** The document whose chunks are being read. */
interface Current {
  archiveId: string;
  documentId: string;
  declared: number;
  next: number;
}

/** A document's run once it is inserted, and what it ends as. */
interface Ending {
  documentId: string;
  status: DocumentRecord['status'];
  error: DocumentRecord['error'];
  chunks: number;
}

/**
 * Writes an archive's documents and chunks into a new dataset, in the import's transaction, checking
 * each record as it comes (docs/export-format.md, Refusals): a document as an upload of it is checked,
 * its bytes against its header, each chunk against its document and the archive's model. Documents
 * are inserted a group at a time, chunks a batch at a time, so that what is held is a batch.
 */
export class ImportWriter {
  private readonly seen = new Set<string>();
  private current: Current | null = null;
  private documentsPending: { document: NewDocument; content: Buffer }[] = [];
  private pendingBytes = 0;
  private chunksPending: DocumentChunks[] = [];
  private pendingChunkCount = 0;
  private readonly endings: Ending[] = [];
  private readonly totals: ImportTotals = { documents: 0, chunks: 0, chunksWithoutVector: 0 };
  /** Documents imported as processing, queued once the import commits. */
  readonly queued: QueuedRun[] = [];

  constructor(
    private readonly tx: Tx,
    private readonly dataset: DatasetEntity,
    private readonly manifest: ManifestRecord,
    private readonly keepVectors: boolean,
    private readonly deps: {
      uploads: DocumentsService;
      documents: DocumentsRepository;
      chunkIndex: ChunkIndexRepository;
    },
  ) {}

  /** Every record after the dataset's, up to and including `end`; nothing may follow it. */
  async writeAll(records: AsyncIterator<NumberedRecord>): Promise<ImportTotals> {
    for (let next = await records.next(); !next.done; next = await records.next()) {
      const { record, line } = next.value;
      const place = { record: line };
      switch (record.type) {
        case 'document':
          await this.document(record, place);
          break;
        case 'chunk':
          await this.chunk(record, place);
          break;
        case 'end': {
          this.closeDocument(place);
          if (record.documents !== this.totals.documents || record.chunks !== this.totals.chunks) {
            throw TransferErrors.corrupt(
              `the end record counts ${record.documents} documents and ${record.chunks} chunks; the archive holds ${this.totals.documents} and ${this.totals.chunks}`,
              place,
            );
          }
          const after = await records.next();
          if (!after.done)
            throw TransferErrors.corrupt('records follow the end record', { record: after.value.line });
          await this.flush();
          await this.settle();
          return this.totals;
        }
        case 'manifest':
        case 'dataset':
          throw TransferErrors.corrupt(`a ${record.type} record in the middle of the archive`, place);
      }
    }
    throw TransferErrors.truncated('no end record');
  }

  private async document(record: DocumentRecord, place: ArchivePlace): Promise<void> {
    this.closeDocument(place);
    const at = { ...place, document_id: record.id };
    if (this.seen.has(record.id)) throw TransferErrors.duplicateId(record.id, at);
    this.seen.add(record.id);
    if (this.seen.size > DOCUMENT_LIMITS.perDataset) {
      throw TransferErrors.overLimits(
        'documents_per_dataset',
        `a dataset holds at most ${DOCUMENT_LIMITS.perDataset} documents`,
        at,
      );
    }
    if (record.filename !== null && outsideArchive(record.filename)) {
      throw TransferErrors.unsafePath(record.filename, at);
    }
    if (record.size_bytes > DOCUMENT_LIMITS.fileBytes) {
      throw TransferErrors.overLimits(
        'file_bytes',
        `files may be at most ${DOCUMENT_LIMITS.fileBytes} bytes`,
        at,
      );
    }
    const content = strictBase64(record.content_base64, at, 'content_base64');
    const digest = createHash('sha256').update(content).digest('hex');
    if (content.length !== record.size_bytes || digest !== record.sha256) {
      throw TransferErrors.sizeMismatch(record.size_bytes, content.length, at);
    }
    const issue = metadataIssue(record.metadata);
    if (issue) throw TransferErrors.overLimits('metadata', `metadata ${issue}`, at);
    if (record.status === 'failed' && record.error === null) {
      throw TransferErrors.corrupt('a failed document without its error', at);
    }
    const upload = await this.checkedUpload(record, content, at);
    if (this.documentsPending.length >= DOCUMENT_BATCH || this.pendingBytes >= DOCUMENT_BATCH_BYTES) {
      await this.flush();
    }
    const document = newDocument(this.dataset, upload);
    const documentId = document.id;
    this.documentsPending.push({ document, content });
    this.pendingBytes += content.length;
    this.endings.push({ documentId, status: record.status, error: record.error, chunks: record.chunks });
    this.current = { archiveId: record.id, documentId, declared: record.chunks, next: 0 };
    this.totals.documents += 1;
  }

  /** The document as an upload of it is checked: its text's or file's limits and its type. */
  private async checkedUpload(
    record: DocumentRecord,
    content: Buffer,
    place: ArchivePlace,
  ): Promise<NewUpload> {
    try {
      return record.filename === null
        ? this.deps.uploads.textUpload(content.toString('utf8'), record.metadata)
        : await this.deps.uploads.fileUpload(record.filename, content, record.metadata, record.media_type);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      throw TransferErrors.overLimits(error.code, error.message, { ...place, cause: error.details ?? null });
    }
  }

  private async chunk(record: ChunkRecord, place: ArchivePlace): Promise<void> {
    const current = this.current;
    if (current === null || record.document_id !== current.archiveId) {
      throw TransferErrors.unknownDocument(record.document_id, place);
    }
    if (record.ordinal < current.next) {
      throw TransferErrors.duplicateId(`${record.document_id} chunk ${record.ordinal}`, place);
    }
    if (record.ordinal > current.next) {
      throw TransferErrors.corrupt(`chunk ${current.next} of ${record.document_id} is missing`, place);
    }
    if (record.ordinal >= current.declared) {
      throw TransferErrors.corrupt(
        `${record.document_id} has more chunks than its header's ${current.declared}`,
        place,
      );
    }
    let vector: number[] | null = null;
    if (record.vector !== null) {
      if (this.manifest.embedding === null) {
        throw TransferErrors.invalidVector('the manifest names no model', place);
      }
      // Checked whether or not it is kept: an archive is refused whole or taken whole.
      vector = decodeVector(record.vector, this.manifest.embedding.dimensions, place);
    }
    if (!this.keepVectors) vector = null;
    const chunk = {
      content: record.content,
      tokenCount: record.token_count,
      page: record.page,
      charStart: record.char_start,
      charEnd: record.char_end,
      context: record.context,
    };
    // A document's chunks with vectors and without go in separate parts: a part has a vector for each or none.
    const last = this.chunksPending.at(-1);
    if (last && last.documentId === current.documentId && (last.embeddings !== null) === (vector !== null)) {
      last.chunks.push(chunk);
      if (vector) last.embeddings!.vectors.push(vector);
    } else {
      this.chunksPending.push({
        documentId: current.documentId,
        chunks: [chunk],
        embeddings: vector
          ? {
              name: this.manifest.embedding!.model,
              dimensions: this.manifest.embedding!.dimensions,
              vectors: [vector],
            }
          : null,
        firstOrdinal: record.ordinal,
      });
    }
    current.next += 1;
    this.totals.chunks += 1;
    if (!vector) this.totals.chunksWithoutVector += 1;
    this.pendingChunkCount += 1;
    if (this.pendingChunkCount >= CHUNK_BATCH) await this.flush();
  }

  /** The document read so far must have had every chunk its header announced. */
  private closeDocument(place: ArchivePlace): void {
    const current = this.current;
    if (current && current.next !== current.declared) {
      throw TransferErrors.truncated(
        `${current.archiveId} has ${current.next} of the ${current.declared} chunks its header announces`,
        place,
      );
    }
    this.current = null;
  }

  /** Inserts the documents read so far, then their chunks (which refer to them). */
  private async flush(): Promise<void> {
    if (this.documentsPending.length > 0) {
      await this.deps.documents.insertMany(this.tx, this.documentsPending);
      this.documentsPending = [];
      this.pendingBytes = 0;
    }
    if (this.chunksPending.length > 0) {
      await this.deps.chunkIndex.appendChunks(
        this.tx,
        { datasetId: this.dataset.id, datasetSeq: this.dataset.seq, language: this.dataset.language },
        this.chunksPending,
      );
      this.chunksPending = [];
      this.pendingChunkCount = 0;
    }
  }

  /**
   * Each document ends as it was exported: ready with its chunks, failed with its error, or processing,
   * queued to run again once the import commits; a failed or processing one keeps the chunks it was
   * exported with (the version a replacement left searchable). A batch of runs a statement.
   */
  private async settle(): Promise<void> {
    for (let first = 0; first < this.endings.length; first += DOCUMENT_BATCH) {
      const batch = this.endings.slice(first, first + DOCUMENT_BATCH);
      // A document is inserted at generation 1, as an upload is.
      const ready = batch
        .filter((ending) => ending.status === 'ready')
        .map((ending) => ({
          documentId: ending.documentId,
          datasetSeq: this.dataset.seq,
          generation: 1,
          chunks: ending.chunks,
          embedded: null,
          reused: null,
        }));
      if (ready.length > 0) await this.deps.documents.markReady(this.tx, this.dataset.seq, ready);
      const indexed = batch.filter((ending) => ending.status !== 'ready' && ending.chunks > 0);
      if (indexed.length > 0) await this.deps.documents.setIndexedChunks(this.tx, this.dataset.seq, indexed);
      for (const ending of batch) {
        const run: Run = { documentId: ending.documentId, datasetSeq: this.dataset.seq, generation: 1 };
        if (ending.status === 'failed') {
          await this.deps.documents.fail(this.tx, run, {
            code: ending.error!.code,
            message: ending.error!.message,
            details: ending.error!.details ?? {},
          });
        }
        if (ending.status === 'processing')
          this.queued.push({
            id: ending.documentId,
            datasetSeq: this.dataset.seq,
            generation: 1,
            recoveries: 0,
          });
      }
    }
  }
}

/** A name that would reach outside a folder it is unpacked into: absolute, or with a `..` step. */
export function outsideArchive(filename: string): boolean {
  if (/^([\\/]|[A-Za-z]:)/.test(filename)) return true;
  return filename.split(/[\\/]/).some((step) => step === '..');
}
