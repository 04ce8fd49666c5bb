import { Inject, Injectable } from '@nestjs/common';
import { newId } from 'src/common/ids/ids.js';
import { CORE_CONFIG, type CoreConfig } from 'src/config/core.config.js';
import { WEBHOOKS_CONFIG, type WebhooksConfig } from 'src/modules/webhooks/webhooks.config.js';
import type { AccountPrincipal } from 'src/modules/auth/auth.types.js';
import {
  deliveryHeaders,
  deliveryPolicy,
  outcomeOf,
  type SendResult,
  sendDelivery,
} from 'src/modules/webhooks/delivery/webhook-sender.js';
import { SAMPLE_EVENT_DATA } from 'src/modules/webhooks/sample-events.js';
import type { WebhookEvent } from 'src/modules/webhooks/webhook-events.js';
import { WebhooksService } from 'src/modules/webhooks/webhooks.service.js';

/**
 * Test deliveries (`POST /v1/webhooks/test`): an event with sample data, signed as any delivery, sent
 * now from the API's process. Not queued, retried or logged, and not counted towards the webhook's
 * failure rate: a receiver being set up should not disable its own webhook.
 */
@Injectable()
export class TestDeliveryService {
  constructor(
    private readonly webhooks: WebhooksService,
    @Inject(WEBHOOKS_CONFIG) private readonly config: WebhooksConfig,
    @Inject(CORE_CONFIG) private readonly core: Pick<CoreConfig, 'nodeEnv'>,
  ) {}

  /** Sends `event` to the webhook, active or not, and answers how it went. */
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
      { timeoutMs: this.config.timeoutMs, policy: deliveryPolicy(this.core, this.config) },
    );
    return { event, delivered: outcomeOf(result) === 'delivered', result };
  }
}
