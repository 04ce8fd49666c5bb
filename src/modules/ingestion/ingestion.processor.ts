import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';
import { JobName, type ProcessDocumentJob, QueueName } from 'src/modules/ingestion/ingestion.queue.js';
import { IngestionService } from 'src/modules/ingestion/ingestion.service.js';

/**
 * The Bull processor of the ingestion queue, present only in processes with ROLE `all` or `worker`.
 * Several workers may share one queue; each runs INGEST_CONCURRENCY documents at once.
 */
@Injectable()
export class IngestionProcessor implements OnApplicationBootstrap {
  constructor(
    @InjectQueue(QueueName.Ingestion) private readonly queue: Queue<ProcessDocumentJob>,
    private readonly ingestion: IngestionService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    // Not awaited: `process` resolves only when the queue closes.
    void this.queue.process(
      JobName.ProcessDocument,
      this.config.ingestion.concurrency,
      (job: Job<ProcessDocumentJob>) => this.ingestion.process(job.data),
    );
    this.queue.on('failed', (job: Job<ProcessDocumentJob>, error: Error) => void this.onFailed(job, error));
    this.logger.info({ concurrency: this.config.ingestion.concurrency }, 'ingestion worker started');
  }

  /** After the last retry of a transient failure, the document fails with processing_error. */
  private async onFailed(job: Job<ProcessDocumentJob>, error: Error): Promise<void> {
    this.logger.warn(
      { err: error, document_id: job.data.documentId, attempt: job.attemptsMade },
      'processing attempt failed',
    );
    if (job.attemptsMade < (job.opts.attempts ?? 1)) return;
    try {
      await this.ingestion.fail(job.data, {
        code: 'processing_error',
        message: 'Processing failed after several attempts; the document can be reprocessed',
        details: { attempts: job.attemptsMade, reason: error.message },
      });
    } catch (err) {
      // The recovery sweep will find the document still processing and settle it.
      this.logger.error({ err, document_id: job.data.documentId }, 'could not mark document failed');
    }
  }
}
