import { availableParallelism } from 'node:os';
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import type { ExtractedText } from 'src/common/text/extracted-text.js';
import { ThreadPool, ThreadTimeoutError } from 'src/common/threads/thread-pool.js';
import { INGESTION_CONFIG, type IngestionConfig } from 'src/modules/ingestion/ingestion.config.js';
import type { ParsedKind } from 'src/modules/ingestion/extraction/extract-file.js';
import type { DocumentKind } from 'src/modules/documents/file-kinds.js';
import { OcrService } from 'src/modules/ingestion/extraction/ocr.service.js';
import { withoutControlCharacters } from 'src/common/text/text-decoding.js';
import {
  IngestionErrors,
  PermanentProcessingError,
  type ProcessingErrorCode,
} from 'src/modules/ingestion/ingestion.errors.js';

export interface ExtractionRequest {
  kind: ParsedKind;
  bytes: Uint8Array;
}

export type ExtractionReply =
  | { extracted: ExtractedText }
  | { failure: { code: ProcessingErrorCode; message: string; details: Record<string, unknown> } };

const SCRIPT = new URL('./extraction.worker.js', import.meta.url);

/**
 * The text of a document of any supported kind, organised in sections (pages, slides) for citation.
 *
 * Files are parsed in extraction threads, never on the main thread: parsing is synchronous JavaScript
 * that can take seconds for a large file, and on the main thread it would hold every
 * request of the process, searches included, for as long. pdf.js's polyfills of JavaScript's builtins
 * stay in its thread too. Each thread has a heap of its own (`EXTRACTION_MEMORY_MB`) and each file a time
 * limit (`EXTRACTION_TIMEOUT_SECONDS`); a file past either fails its document with
 * `extraction_limit_exceeded`, and a new thread is started for the next. There are as many threads
 * as documents processed at once, up to one per core, started when first needed. Images go to OCR,
 * which has threads of its own.
 */
@Injectable()
export class ExtractionService implements OnApplicationShutdown {
  private readonly threads: ThreadPool<ExtractionRequest, ExtractionReply>;
  private readonly limits: { timeoutSeconds: number; memoryMiB: number };

  constructor(
    private readonly ocr: OcrService,
    @Inject(INGESTION_CONFIG) config: IngestionConfig,
    @Inject(LOGGER) logger: Logger,
  ) {
    const { concurrency, extractionTimeoutSeconds, extractionMemoryMiB } = config;
    this.limits = { timeoutSeconds: extractionTimeoutSeconds, memoryMiB: extractionMemoryMiB };
    this.threads = new ThreadPool(SCRIPT, {
      size: Math.min(concurrency, availableParallelism()),
      resourceLimits: { maxOldGenerationSizeMb: extractionMemoryMiB },
      onFailure: (error) => logger.warn({ err: error }, 'an extraction thread ended'),
    });
  }

  async extract(kind: DocumentKind, bytes: Buffer): Promise<ExtractedText> {
    // An empty file has no text, whatever its type: not a broken PDF, DOCX or image to its reader.
    if (bytes.length === 0) throw IngestionErrors.noText(kind);
    if (kind === 'image') return withoutControlCharacters(await this.ocr.extract(bytes));
    let reply: ExtractionReply;
    try {
      // A copy of the file's own bytes: a Buffer may view a larger pool, which would all be copied.
      reply = await this.threads.run(
        { kind, bytes: new Uint8Array(bytes) },
        this.limits.timeoutSeconds * 1000,
      );
    } catch (error) {
      if (error instanceof ThreadTimeoutError)
        throw IngestionErrors.extractionTimedOut(kind, this.limits.timeoutSeconds);
      if ((error as { code?: unknown }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
        throw IngestionErrors.extractionOutOfMemory(kind, this.limits.memoryMiB);
      }
      throw error; // a thread that could not start (ThreadStartError): transient, the job is retried
    }
    if ('failure' in reply) {
      const { code, message, details } = reply.failure;
      throw new PermanentProcessingError(code, message, details);
    }
    return reply.extracted;
  }

  onApplicationShutdown(): Promise<void> {
    return this.threads.close();
  }
}
