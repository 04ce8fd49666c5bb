import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { WEBHOOKS_CONFIG, type WebhooksConfig } from 'src/modules/webhooks/webhooks.config.js';
import { DeliveryAttemptService } from 'src/modules/webhooks/delivery/delivery-attempt.service.js';
import { DeliveryLoopsService } from 'src/modules/webhooks/delivery/delivery-loops.service.js';
import { DELIVER_JOB, type DeliverJob, WEBHOOK_QUEUE } from 'src/modules/webhooks/delivery/webhook.queue.js';

/**
 * The Bull processor of the webhooks queue, in processes with ROLE `all` or `worker`: one attempt a
 * job (`DeliveryAttemptService`), WEBHOOK_CONCURRENCY at once. Several workers may share the queue.
 */
@Injectable()
export class WebhookDeliveryProcessor implements OnApplicationBootstrap, OnApplicationShutdown {
  constructor(
    @InjectQueue(WEBHOOK_QUEUE) private readonly queue: Queue<DeliverJob>,
    private readonly attempts: DeliveryAttemptService,
    private readonly loops: DeliveryLoopsService,
    @Inject(WEBHOOKS_CONFIG) private readonly config: WebhooksConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    // Not awaited: `process` resolves only when the queue closes.
    this.queue
      .process(DELIVER_JOB, this.config.concurrency, (job: Job<DeliverJob>) =>
        this.attempts.attempt(job.data),
      )
      .catch((err: unknown) => this.logger.error({ err }, 'webhooks queue processor stopped'));
    // An attempt that throws (the database unreachable mid-way) leaves its delivery to the sweep.
    this.queue.on('failed', (job: Job<DeliverJob> | null, err: Error) =>
      this.logger.warn(
        { err, delivery_id: job?.data.deliveryId },
        'webhook attempt failed; the sweep retries it',
      ),
    );
  }

  /**
   * Closes the queue, which waits for the attempts under way, once the loops have stopped: a dispatch
   * or sweep under way still queues jobs. Within a module Nest shuts dependents down first, so this
   * hook runs before the loops' own, which then finds them stopped.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.loops.stop();
    await this.queue.close();
  }
}
