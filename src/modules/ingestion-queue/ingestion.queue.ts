import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable } from '@nestjs/common';
import type { Queue } from 'bull';
import type { Logger } from 'pino';
import { withDeadline } from 'src/common/async/deadline.js';
import { LOGGER } from 'src/common/logging/logger.js';

export enum QueueName {
  Ingestion = 'ingestion',
}

export enum JobName {
  ProcessDocument = 'process-document',
}

export interface ProcessDocumentJob {
  documentId: string;
  /** The document's dataset's `seq` (DocumentEntity.datasetSeq); absent from jobs queued by earlier versions. */
  datasetSeq?: string;
  /** The run this job belongs to (see DocumentEntity.generation). */
  generation: number;
}

/**
 * Transient failures (database or model busy, Redis blips) are retried with exponential backoff:
 * 2 s, 6 s, 14 s, 30 s (Bull waits `delay × (2^attempts made − 1)`). Permanent ones (a corrupt file)
 * never reach Bull's retry: the pipeline marks the document failed and the job completes.
 */
export const PROCESS_DOCUMENT_RETRY = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 2_000 },
} as const;

/**
 * An attempt that has not finished in this long is failed by Bull (and retried): a stage that hangs
 * (a dead OCR worker thread, a model call that never returns) must not keep its document processing.
 */
export const PROCESS_DOCUMENT_TIMEOUT_MS = 10 * 60 * 1000;

/** How long an upload waits for Redis to accept the job before leaving it to the recovery sweep. */
const ENQUEUE_TIMEOUT_MS = 3_000;

/** One job id per run and restart, so that Bull never drops a job as a duplicate of an older one. */
export function processDocumentJobId(documentId: string, generation: number, recoveries: number): string {
  return `${documentId}.${generation}.${recoveries}`;
}

/** A run of a document's processing, as its job is named. */
export interface QueuedRun {
  id: string;
  datasetSeq: string;
  generation: number;
  recoveries: number;
}

function processDocumentJob(document: QueuedRun) {
  return {
    name: JobName.ProcessDocument,
    data: { documentId: document.id, datasetSeq: document.datasetSeq, generation: document.generation },
    opts: {
      ...PROCESS_DOCUMENT_RETRY,
      timeout: PROCESS_DOCUMENT_TIMEOUT_MS,
      jobId: processDocumentJobId(document.id, document.generation, document.recoveries),
      removeOnComplete: true,
      removeOnFail: true,
    },
  };
}

@Injectable()
export class IngestionQueue {
  constructor(
    @InjectQueue(QueueName.Ingestion) private readonly queue: Queue<ProcessDocumentJob>,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Queues a document's processing. A failure is logged, not thrown: the document is already stored
   * as processing, and the recovery sweep queues it again once Redis is back.
   */
  async enqueue(document: QueuedRun): Promise<boolean> {
    const job = processDocumentJob(document);
    const added = this.queue.add(job.name, job.data, job.opts);
    try {
      await withDeadline(
        added,
        ENQUEUE_TIMEOUT_MS,
        () => new Error(`no answer from Redis in ${ENQUEUE_TIMEOUT_MS} ms`),
      );
      return true;
    } catch (err) {
      this.logger.warn(
        { err, document_id: document.id },
        'could not queue document; the recovery sweep will',
      );
      return false;
    }
  }

  /**
   * Queues several documents' processing in one round trip to Redis, each job as `enqueue` makes it.
   * A failure is logged, not thrown, as there: the recovery sweep queues the documents again.
   */
  async enqueueMany(documents: readonly QueuedRun[]): Promise<boolean> {
    if (documents.length === 0) return true;
    try {
      await withDeadline(
        this.queue.addBulk(documents.map(processDocumentJob)),
        ENQUEUE_TIMEOUT_MS,
        () => new Error(`no answer from Redis in ${ENQUEUE_TIMEOUT_MS} ms`),
      );
      return true;
    } catch (err) {
      this.logger.warn(
        { err, document_ids: documents.map((document) => document.id) },
        'could not queue documents; the recovery sweep will',
      );
      return false;
    }
  }

  /** Whether a job for this run is waiting, delayed or running. */
  async hasLiveJob(document: QueuedRun): Promise<boolean> {
    const job = await this.queue.getJob(
      processDocumentJobId(document.id, document.generation, document.recoveries),
    );
    if (!job) return false;
    const state = await job.getState();
    return state === 'waiting' || state === 'delayed' || state === 'active' || state === 'paused';
  }
}
