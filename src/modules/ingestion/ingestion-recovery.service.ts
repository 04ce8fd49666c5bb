import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { INGESTION_CONFIG, type IngestionConfig } from 'src/modules/ingestion/ingestion.config.js';
import { IngestionQueue } from 'src/modules/ingestion-queue/ingestion.queue.js';
import { DocumentsRepository, type StaleRun } from 'src/modules/documents/documents.repository.js';
import { IngestionService } from 'src/modules/ingestion/ingestion.service.js';

const SWEEP_BATCH = 100;

/**
 * No document stays `processing` forever. Every sweep looks at documents whose run has not reported
 * (heartbeat) for INGEST_STALE_AFTER_SECONDS; if no live job is queued or running for the run (its
 * worker was killed, Redis lost the job, or the upload could not queue it), the run is queued again, up
 * to INGEST_MAX_RECOVERIES times, after which the document fails with processing_error.
 */
@Injectable()
export class IngestionRecoveryService implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;
  private sweeping?: Promise<void>;

  constructor(
    private readonly documents: DocumentsRepository,
    private readonly queue: IngestionQueue,
    private readonly ingestion: IngestionService,
    @Inject(INGESTION_CONFIG) private readonly config: IngestionConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    const interval = Math.max(1, Math.min(30, this.config.staleAfterSeconds / 2)) * 1000;
    this.timer = setInterval(() => void this.sweep(), interval);
    this.timer.unref();
    void this.sweep();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping;
  }

  /** One pass; concurrent calls share the pass in progress. */
  sweep(): Promise<void> {
    this.sweeping ??= this.sweepOnce()
      .catch((err: unknown) => this.logger.warn({ err }, 'recovery sweep failed'))
      .finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  private async sweepOnce(): Promise<void> {
    const stale = await this.documents.staleRuns(this.config.staleAfterSeconds, SWEEP_BATCH);
    for (const run of stale) {
      // One run that cannot be settled must not hold up the others: it comes first again next time.
      await this.recover(run).catch((err: unknown) =>
        this.logger.warn({ err, document_id: run.id }, 'could not recover a stalled document'),
      );
    }
  }

  private async recover(stale: StaleRun): Promise<void> {
    const run = { documentId: stale.id, datasetSeq: stale.datasetSeq, generation: stale.generation };
    if (await this.queue.hasLiveJob(stale)) return;
    if (stale.recoveries >= this.config.maxRecoveries) {
      await this.ingestion.fail(run, {
        code: 'processing_error',
        message:
          'Processing stopped repeatedly (the worker died or the queue lost the job); the document can be reprocessed',
        details: { recoveries: stale.recoveries },
      });
      return;
    }
    if (!(await this.documents.recordRecovery(run, stale.recoveries))) return;
    this.logger.warn(
      { document_id: stale.id, recoveries: stale.recoveries + 1 },
      'restarting a stalled document',
    );
    await this.queue.enqueue({
      id: stale.id,
      datasetSeq: stale.datasetSeq,
      generation: stale.generation,
      recoveries: stale.recoveries + 1,
    });
  }
}
