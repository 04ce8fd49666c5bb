import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { INGESTION_CONFIG, type IngestionConfig } from 'src/modules/ingestion/ingestion.config.js';
import { briefReason } from 'src/modules/ingestion/ingestion.errors.js';
import { JobName, type ProcessDocumentJob, QueueName } from 'src/modules/ingestion-queue/ingestion.queue.js';
import { IngestionService } from 'src/modules/ingestion/ingestion.service.js';
import { DocumentsRepository, type Run } from 'src/modules/documents/documents.repository.js';

/**
 * The Bull processor of the ingestion queue, present only in processes with ROLE `all` or `worker`.
 * Several workers may share one queue; each runs INGEST_CONCURRENCY documents at once.
 */
@Injectable()
export class IngestionProcessor implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    @InjectQueue(QueueName.Ingestion) private readonly queue: Queue<ProcessDocumentJob>,
    private readonly ingestion: IngestionService,
    private readonly documents: DocumentsRepository,
    @Inject(INGESTION_CONFIG) private readonly config: IngestionConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    // Not awaited: `process` resolves only when the queue closes.
    void this.queue.process(
      JobName.ProcessDocument,
      this.config.concurrency,
      async (job: Job<ProcessDocumentJob>) => this.ingestion.process(await this.runOf(job.data)),
    );
    this.queue.on('failed', (job: Job<ProcessDocumentJob> | null, error: Error) =>
      this.handled('failed', this.onFailed(job, error)),
    );
    this.logger.info({ concurrency: this.config.concurrency }, 'ingestion worker started');
  }

  /**
   * Closes the queue, which waits for the jobs under way, before the services those jobs use shut
   * down. Nest shuts a module down before the modules it imports, so the queue (IngestionQueueModule)
   * would otherwise close after the extraction threads (this module) and the model threads
   * (EmbeddingsModule). Within this module, dependents shut down first: this hook ends before
   * ExtractionService's and OcrService's begin. The queue's own hook then finds it closed.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.queue.close();
  }

  /** The job's run; a job queued without its dataset's seq (by an earlier version) has it looked up. */
  private async runOf(job: ProcessDocumentJob): Promise<Run> {
    const datasetSeq = job.datasetSeq ?? (await this.documents.datasetSeqOf(job.documentId)) ?? '0';
    return { documentId: job.documentId, datasetSeq, generation: job.generation };
  }

  /**
   * Bull does not await its listeners, so a listener that rejects is an unhandled rejection, which
   * ends the process and every job it is running. Every listener's work goes through here.
   */
  private handled(event: string, work: Promise<void>): void {
    work.catch((err: unknown) => this.logger.error({ err, event }, 'queue event handler failed'));
  }

  /** After the last retry of a transient failure, the document fails with processing_error. */
  private async onFailed(job: Job<ProcessDocumentJob> | null, error: Error): Promise<void> {
    if (!job) {
      // Bull fails a job that stalled more than maxStalledCount times after removeOnFail has deleted
      // it, so the event names no document. None is lost: its run stops reporting and has no live
      // job, so the recovery sweep queues it again after INGEST_STALE_AFTER_SECONDS, or fails it with
      // processing_error once it has been restarted INGEST_MAX_RECOVERIES times.
      this.logger.warn({ err: error }, 'a removed job failed; the recovery sweep settles its document');
      return;
    }
    this.logger.warn(
      { err: error, document_id: job.data.documentId, attempt: job.attemptsMade },
      'processing attempt failed',
    );
    if (job.attemptsMade < (job.opts.attempts ?? 1)) return;
    try {
      await this.ingestion.fail(await this.runOf(job.data), {
        code: 'processing_error',
        message: 'Processing failed after several attempts; the document can be reprocessed',
        details: { attempts: job.attemptsMade, reason: briefReason(error.message) },
      });
    } catch (err) {
      // The recovery sweep will find the document still processing and settle it.
      this.logger.error({ err, document_id: job.data.documentId }, 'could not mark document failed');
    }
  }
}
