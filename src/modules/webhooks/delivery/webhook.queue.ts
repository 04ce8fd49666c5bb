import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable } from '@nestjs/common';
import type { Queue } from 'bull';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { DeliveriesRepository } from 'src/modules/webhooks/delivery/deliveries.repository.js';

export const WEBHOOK_QUEUE = 'webhooks';
export const DELIVER_JOB = 'deliver';

/** "Try this delivery now, as attempt `attempts + 1`": the database says whether it still should. */
export interface DeliverJob {
  deliveryId: string;
  attempts: number;
}

/**
 * The webhooks queue, for the API (redelivery) and the workers. A job per attempt (its id names the
 * attempt, so the same one queued twice runs once); a failure to queue is logged, not thrown: the
 * sweep finds due deliveries in the database.
 */
@Injectable()
export class WebhookQueue {
  constructor(
    @InjectQueue(WEBHOOK_QUEUE) private readonly queue: Queue<DeliverJob>,
    private readonly deliveries: DeliveriesRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Queues up to `limit` deliveries due now and first in line for their resource (of these webhooks;
   * without them, of all), as the database has them: after a delivery ends, its successor is one.
   */
  async enqueueDue(limit: number, webhookIds?: string[]): Promise<void> {
    await this.enqueue(await this.deliveries.due(limit, webhookIds));
  }

  async enqueue(deliveries: readonly DeliverJob[], delayMs = 0): Promise<void> {
    if (deliveries.length === 0) return;
    try {
      await this.queue.addBulk(
        deliveries.map((job) => ({
          name: DELIVER_JOB,
          data: job,
          opts: {
            jobId: `${job.deliveryId}.${job.attempts}`,
            delay: delayMs,
            removeOnComplete: true,
            removeOnFail: true,
          },
        })),
      );
    } catch (err) {
      this.logger.warn(
        { err, deliveries: deliveries.length },
        'could not queue webhook deliveries; the sweep will',
      );
    }
  }
}
