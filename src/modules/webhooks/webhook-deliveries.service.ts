import { Inject, Injectable } from '@nestjs/common';
import { AppError } from 'src/common/errors/app-error.js';
import { isId, newId } from 'src/common/ids/ids.js';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';
import type { AccountPrincipal } from 'src/modules/auth/auth.types.js';
import { DeliveriesRepository } from 'src/modules/webhooks/delivery/deliveries.repository.js';
import {
  deliveryHeaders,
  deliveryPolicy,
  outcomeOf,
} from 'src/modules/webhooks/delivery/webhook-delivery.service.js';
import { type SendResult, sendDelivery } from 'src/modules/webhooks/delivery/webhook-sender.js';
import { WebhookQueue } from 'src/modules/webhooks/delivery/webhook.queue.js';
import {
  type DeliveryLogEntry,
  type DeliveryStatus,
  DeliveryLogRepository,
} from 'src/modules/webhooks/delivery-log.repository.js';
import { SAMPLE_EVENT_DATA } from 'src/modules/webhooks/sample-events.js';
import type { WebhookEvent } from 'src/modules/webhooks/webhook-events.js';
import { WebhooksService } from 'src/modules/webhooks/webhooks.service.js';

export const DeliveryErrors = {
  notFound: (deliveryId: string) =>
    new AppError(404, 'delivery_not_found', `Delivery "${deliveryId.slice(0, 64)}" not found`, {
      delivery_id: deliveryId.slice(0, 64),
    }),
};

/** A webhook's delivery log, sending an event again, and test deliveries. */
@Injectable()
export class WebhookDeliveriesService {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly log: DeliveryLogRepository,
    private readonly deliveries: DeliveriesRepository,
    private readonly queue: WebhookQueue,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async list(
    caller: AccountPrincipal,
    webhookId: string,
    query: { status?: DeliveryStatus; limit: number; offset: number },
  ): Promise<{ items: DeliveryLogEntry[]; total: number }> {
    const webhook = await this.webhooks.get(caller, webhookId);
    return this.log.listByWebhook(webhook.id, query.status, query.limit, query.offset);
  }

  /** The event of a delivery, delivered again as a new delivery (behind any of its resource's still pending). */
  async redeliver(
    caller: AccountPrincipal,
    webhookId: string,
    deliveryId: string,
  ): Promise<DeliveryLogEntry> {
    const webhook = await this.webhooks.get(caller, webhookId);
    const delivery = isId('dlv', deliveryId)
      ? await this.log.redeliver(webhook.id, deliveryId, newId('dlv'))
      : null;
    if (!delivery) throw DeliveryErrors.notFound(deliveryId);
    await this.queue.enqueue(await this.deliveries.due(100, [webhook.id]));
    return delivery;
  }

  /**
   * Sends a test delivery of `event` with sample data, signed as any delivery, now, from this process,
   * and answers how it went. It is not queued, retried or logged, and does not count towards the
   * webhook's failure rate; an inactive webhook is tested all the same.
   */
  async test(
    caller: AccountPrincipal,
    webhookId: string,
    event: WebhookEvent,
  ): Promise<{ event: WebhookEvent; delivered: boolean; result: SendResult }> {
    const webhook = await this.webhooks.get(caller, webhookId);
    const id = newId('evt');
    const body = JSON.stringify({
      id,
      event,
      timestamp: new Date().toISOString(),
      data: SAMPLE_EVENT_DATA[event],
    });
    const secrets =
      webhook.previousSecret &&
      webhook.previousSecretExpiresAt &&
      webhook.previousSecretExpiresAt > new Date()
        ? [webhook.secret, webhook.previousSecret]
        : [webhook.secret];
    const result = await sendDelivery(
      webhook.url,
      body,
      deliveryHeaders({ event, eventId: id, body, secrets, attemptId: newId('att') }),
      { timeoutMs: this.config.webhooks.timeoutMs, policy: deliveryPolicy(this.config) },
    );
    return { event, delivered: outcomeOf(result) === 'delivered', result };
  }
}
