import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { newId } from 'src/common/ids/ids.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { CORE_CONFIG, type CoreConfig } from 'src/config/core.config.js';
import { WEBHOOKS_CONFIG, type WebhooksConfig } from 'src/modules/webhooks/webhooks.config.js';
import { TransactionRunner, type Tx } from 'src/database/transaction.js';
import { DeliveriesRepository } from 'src/modules/webhooks/delivery/deliveries.repository.js';
import {
  deliveryHeaders,
  deliveryPolicy,
  outcomeOf,
  sendDelivery,
} from 'src/modules/webhooks/delivery/webhook-sender.js';
import { type DeliverJob, WebhookQueue } from 'src/modules/webhooks/delivery/webhook.queue.js';

/** A webhook failing more than this share of its deliveries over 24 hours is disabled. */
const DISABLE_ABOVE_FAILURE_RATE = 0.8;
/** Due deliveries of the webhook queued when one of its deliveries ends. */
const NEXT_IN_LINE_BATCH = 100;
/** Time an attempt may take beyond its timeout before the sweep may try the delivery again. */
const LEASE_MARGIN_MS = 30_000;

/**
 * One attempt of a delivery, from its claim to what follows: delivered; failed for good (a 4xx, or
 * the retries spent), which may disable the webhook; or retried after `WEBHOOK_RETRY_DELAYS_SECONDS`.
 * A delivery that ends lets the next one of the same resource go (per webhook, a resource's events
 * arrive in the order they happened, retries included).
 */
@Injectable()
export class DeliveryAttemptService {
  constructor(
    private readonly deliveries: DeliveriesRepository,
    private readonly queue: WebhookQueue,
    private readonly transactions: TransactionRunner,
    @Inject(WEBHOOKS_CONFIG) private readonly config: WebhooksConfig,
    @Inject(CORE_CONFIG) private readonly core: Pick<CoreConfig, 'nodeEnv'>,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async attempt(job: DeliverJob): Promise<void> {
    const { timeoutMs, hourlyLimit } = this.config;
    const claimed = await this.deliveries.claim(job.deliveryId, job.attempts, timeoutMs + LEASE_MARGIN_MS);
    if (!claimed) return; // done, not due, not first in line, or its webhook is off: nothing to send
    if (!(await this.deliveries.takeHourlySlot(claimed.webhookId, hourlyLimit))) {
      // Held back, not dropped: the sweep tries it again once the next hour has begun.
      await this.deliveries.deferToNextHour(claimed.id);
      return;
    }
    const attemptId = newId('att');
    const startedAt = new Date();
    const result = await sendDelivery(
      claimed.url,
      claimed.body,
      deliveryHeaders({ ...claimed, attemptId }, startedAt),
      { timeoutMs, policy: deliveryPolicy(this.core, this.config) },
    );
    const outcome = outcomeOf(result);
    const delays = this.config.retryDelaysSeconds;
    const retry = outcome === 'retry' && claimed.attempt <= delays.length;
    const record = {
      id: attemptId,
      deliveryId: claimed.id,
      attempt: claimed.attempt,
      outcome: outcome === 'delivered' ? ('delivered' as const) : ('failed' as const),
      ...result,
      startedAt,
    };
    if (retry) {
      const delayMs = delays[claimed.attempt - 1] * 1000;
      const retryAt = new Date(Date.now() + delayMs);
      await this.transactions.run((tx) => this.deliveries.settle(tx, record, { retryAt }));
      await this.queue.enqueue([{ deliveryId: claimed.id, attempts: claimed.attempt }], delayMs);
      return;
    }
    if (outcome === 'delivered') {
      await this.transactions.run((tx) => this.deliveries.settle(tx, record, { status: 'delivered' }));
    } else {
      // The failure and the disabling it may cause commit together: no one sees the one without the other.
      const disabled = await this.transactions.run(async (tx) => {
        await this.deliveries.lockForFailure(tx, claimed.webhookId);
        await this.deliveries.settle(tx, record, { status: 'failed' });
        return this.disableIfFailing(tx, claimed.webhookId);
      });
      if (disabled) {
        this.logger.warn(
          { webhook_id: claimed.webhookId, ...disabled },
          'webhook disabled for failing deliveries',
        );
      }
    }
    await this.queue.enqueueDue(NEXT_IN_LINE_BATCH, [claimed.webhookId]);
  }

  /** Disables the webhook when its failures pass the rule; what they were, if it did. */
  private async disableIfFailing(
    tx: Tx,
    webhookId: string,
  ): Promise<{ ended: number; failed: number } | null> {
    const { ended, failed } = await this.deliveries.recentOutcomes(tx, webhookId);
    if (ended < this.config.disableAfterDeliveries || failed / ended <= DISABLE_ABOVE_FAILURE_RATE)
      return null;
    const reason = `${failed} of its ${ended} deliveries in the last 24 hours failed`;
    return (await this.deliveries.disable(tx, webhookId, reason)) ? { ended, failed } : null;
  }
}
