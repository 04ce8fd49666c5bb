import { Injectable } from '@nestjs/common';
import { isId, newId } from 'src/common/ids/ids.js';
import type { AccountPrincipal } from 'src/modules/auth/auth.types.js';
import { WebhookQueue } from 'src/modules/webhooks/delivery/webhook.queue.js';
import {
  type DeliveryLogEntry,
  DeliveryLogRepository,
  type DeliveryStatus,
} from 'src/modules/webhooks/delivery-log.repository.js';
import { DeliveryErrors } from 'src/modules/webhooks/webhooks.errors.js';
import { WebhooksService } from 'src/modules/webhooks/webhooks.service.js';

/** Due deliveries of the webhook queued after a redelivery (the new one among them when first in line). */
const DUE_AFTER_REDELIVERY = 100;

/** A webhook's delivery log as the API shows it, and sending one of its events again. */
@Injectable()
export class DeliveryLogService {
  constructor(
    private readonly webhooks: WebhooksService,
    private readonly log: DeliveryLogRepository,
    private readonly queue: WebhookQueue,
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
    await this.queue.enqueueDue(DUE_AFTER_REDELIVERY, [webhook.id]);
    return delivery;
  }
}
