import { isUtf8 } from 'node:buffer';
import { Injectable } from '@nestjs/common';
import { AppError, CommonErrors, errorBody, PartlyAppliedError } from 'src/common/errors/app-error.js';
import type { ErrorResponseDto } from 'src/common/http/api-errors.decorator.js';
import type { StreamedBody } from 'src/common/http/streamed-body.js';
import { deeperThan, holdsMoreKeys, MAX_BODY_DEPTH, MAX_BODY_KEYS } from 'src/common/validation/json-body.js';
import { isPlainObject } from 'src/common/validation/metadata.js';
import { AppValidationPipe } from 'src/common/validation/validation.pipe.js';
import { TransactionRunner } from 'src/database/transaction.js';
import type { AccountPrincipal } from 'src/modules/auth/auth.types.js';
import { DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import type { DocumentEntity } from 'src/modules/documents/document.entity.js';
import { BULK_LIMITS, DOCUMENT_LIMITS, DocumentErrors } from 'src/modules/documents/documents.errors.js';
import { DocumentsRepository } from 'src/modules/documents/documents.repository.js';
import {
  DocumentsService,
  type NewUpload,
  newDocument,
  uploadedEvent,
} from 'src/modules/documents/documents.service.js';
import {
  BulkFileLineDto,
  type BulkDocumentResultDto,
  type BulkUploadResponseDto,
} from 'src/modules/documents/dto/bulk-upload.dto.js';
import { toDocumentSummary, UploadTextDocumentDto } from 'src/modules/documents/dto/document.dto.js';
import { type NdjsonLine, ndjsonLines } from 'src/modules/documents/ndjson-lines.js';
import { EventOutbox } from 'src/modules/events/domain-events.js';
import { IngestionQueue } from 'src/modules/ingestion-queue/ingestion.queue.js';

const validation = new AppValidationPipe();

/** A line read and checked, waiting for its group to be written. */
type Checked = { line: number; upload: NewUpload } | { line: number; error: AppError };

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * `POST .../documents/bulk`: NDJSON read as it arrives, each line a document checked on its own as a
 * single upload checks it, written in groups of up to 100 documents (16 MB), each group in one
 * transaction under the dataset row's lock, as a single upload is. A group is written only once the
 * line after it has arrived, so that a request of one group is all or nothing.
 */
@Injectable()
export class BulkUploadService {
  constructor(
    private readonly uploads: DocumentsService,
    private readonly documents: DocumentsRepository,
    private readonly datasets: DatasetsService,
    private readonly datasetsRepository: DatasetsRepository,
    private readonly transactions: TransactionRunner,
    private readonly queue: IngestionQueue,
    private readonly events: EventOutbox,
  ) {}

  async upload(
    caller: AccountPrincipal,
    datasetId: string,
    body: StreamedBody,
  ): Promise<BulkUploadResponseDto> {
    await this.datasets.getOwned(caller, datasetId);
    const results: BulkDocumentResultDto[] = [];
    let group: Checked[] = [];
    let groupBytes = 0;
    let count = 0;
    try {
      for await (const line of ndjsonLines(body.chunks(), BULK_LIMITS.lineBytes)) {
        // The last line of a body cut at its limit is only part of one.
        if (body.exceeded) break;
        if (isBlank(line)) continue;
        count += 1;
        if (count > BULK_LIMITS.documents) {
          results.push(...(await this.write(caller, datasetId, group)));
          // Read to its end all the same, so that the same request repeated is known as such.
          await body.drain();
          throw DocumentErrors.tooManyDocuments();
        }
        if (group.length >= BULK_LIMITS.groupDocuments || groupBytes >= BULK_LIMITS.groupBytes) {
          results.push(...(await this.write(caller, datasetId, group)));
          group = [];
          groupBytes = 0;
        }
        const checked = await this.check(line);
        group.push(checked);
        if ('upload' in checked) groupBytes += checked.upload.content.length;
      }
      if (body.exceeded) {
        results.push(...(await this.write(caller, datasetId, group)));
        throw DocumentErrors.bulkTooLarge();
      }
      if (count === 0) throw DocumentErrors.emptyBulk();
      results.push(...(await this.write(caller, datasetId, group)));
    } catch (error) {
      throw interrupted(error, results);
    }
    return summary(results);
  }

  /** A line as a single upload of it would be read, or the error that upload would have answered. */
  private async check(line: NdjsonLine): Promise<Checked> {
    try {
      if (line.tooLong) throw DocumentErrors.lineTooLong(line.length);
      return { line: line.line, upload: await this.read(line.bytes) };
    } catch (error) {
      if (error instanceof AppError) return { line: line.line, error };
      throw error;
    }
  }

  private async read(bytes: Buffer): Promise<NewUpload> {
    if (!isUtf8(bytes)) throw CommonErrors.invalidJson('is not valid UTF-8');
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString('utf8'));
    } catch (error) {
      throw CommonErrors.invalidJson((error as Error).message);
    }
    if (!isPlainObject(value)) {
      throw CommonErrors.validation([{ field: 'line', issue: 'must be a JSON object' }]);
    }
    if (deeperThan(value, MAX_BODY_DEPTH) || holdsMoreKeys(value, MAX_BODY_KEYS)) {
      throw CommonErrors.validation([
        {
          field: 'line',
          issue: `must not nest more than ${MAX_BODY_DEPTH} levels deep nor hold more than ${MAX_BODY_KEYS} keys`,
        },
      ]);
    }
    if (!('filename' in value) && !('content_base64' in value)) {
      const text = (await validation.transform(value, {
        type: 'body',
        metatype: UploadTextDocumentDto,
      })) as UploadTextDocumentDto;
      return this.uploads.textUpload(text.content, text.metadata);
    }
    const file = (await validation.transform(value, {
      type: 'body',
      metatype: BulkFileLineDto,
    })) as BulkFileLineDto;
    return this.uploads.fileUpload(
      file.filename,
      decodeFile(file.content_base64),
      file.metadata,
      file.media_type,
    );
  }

  /**
   * Writes a group's valid documents in one transaction: one statement for the documents, one for
   * their sources, one count, one for their events; then queues their jobs at once. Past the dataset's
   * limit, a document is refused as a single upload would be.
   */
  private async write(
    caller: AccountPrincipal,
    datasetId: string,
    group: Checked[],
  ): Promise<BulkDocumentResultDto[]> {
    const valid = group.flatMap((checked) => ('upload' in checked ? [checked] : []));
    const written =
      valid.length === 0
        ? { documents: [] as DocumentEntity[], room: 0 }
        : await this.transactions.run(async (tx) => {
            const dataset = await this.datasets.findOwnedForUpdate(tx, caller, datasetId);
            const room = Math.max(0, DOCUMENT_LIMITS.perDataset - dataset.documentCount);
            const accepted = valid.slice(0, room);
            if (accepted.length === 0) return { documents: [], room };
            const documents = await this.documents.insertMany(
              tx,
              accepted.map(({ upload }) => ({
                document: newDocument(dataset, upload),
                content: upload.content,
              })),
            );
            await this.datasetsRepository.adjustDocumentCount(tx, dataset.id, documents.length);
            await this.events.recordMany(
              tx,
              dataset.accountId,
              'document.uploaded',
              documents.map(uploadedEvent),
            );
            return { documents, room };
          });
    await this.queue.enqueueMany(written.documents);
    const created = new Map(
      valid.slice(0, written.room).map((checked, i) => [checked, written.documents[i]]),
    );
    return group.map((checked) => {
      if ('error' in checked) return refused(checked.line, checked.error);
      const document = created.get(checked);
      return document
        ? { line: checked.line, status: 201, document: toDocumentSummary(document) }
        : refused(checked.line, DocumentErrors.limitReached());
    });
  }
}

function isBlank(line: NdjsonLine): boolean {
  return !line.tooLong && line.bytes.toString('utf8').trim() === '';
}

/** A file's base64, decoded; refused as a multipart upload of it would be when over 10 MB. */
function decodeFile(base64: string): Buffer {
  if (base64.length % 4 !== 0 || !BASE64.test(base64)) {
    throw CommonErrors.validation([{ field: 'content_base64', issue: 'must be base64 with padding' }]);
  }
  if ((base64.length / 4) * 3 - (base64.match(/=*$/)?.[0].length ?? 0) > DOCUMENT_LIMITS.fileBytes) {
    throw DocumentErrors.fileTooLarge();
  }
  return Buffer.from(base64, 'base64');
}

function refused(line: number, error: AppError): BulkDocumentResultDto {
  return { line, status: error.status, error: errorBody(error) as ErrorResponseDto };
}

function summary(results: BulkDocumentResultDto[]): BulkUploadResponseDto {
  const created = results.filter((result) => result.document).length;
  return { created, failed: results.length - created, results };
}

/**
 * The error that ends a request, with what it did before in `details`; once documents were
 * created, as a `PartlyAppliedError`, which the request's Idempotency-Key keeps as its answer.
 */
function interrupted(error: unknown, results: BulkDocumentResultDto[]): unknown {
  if (!(error instanceof AppError) || results.length === 0) return error;
  const done = summary(results);
  if (done.created === 0) {
    return new AppError(
      error.status,
      error.code,
      error.message,
      { ...error.details, ...done },
      error.headers,
    );
  }
  return new PartlyAppliedError(error, { ...done });
}
