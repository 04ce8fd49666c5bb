import { Module } from '@nestjs/common';
import { OutboxRepository } from 'src/modules/webhooks/delivery/outbox.repository.js';
import { DeliveryAttemptService } from 'src/modules/webhooks/delivery/delivery-attempt.service.js';
import { WebhookDispatcher } from 'src/modules/webhooks/delivery/webhook-dispatcher.js';
import { WebhookQueueModule } from 'src/modules/webhooks/delivery/webhook-queue.module.js';

/**
 * Delivering the account's events to webhooks: the dispatcher, the queue's processor and the sweep.
 * Imported only where documents are processed too: ROLE `all` (default) or `worker`.
 */
@Module({
  imports: [WebhookQueueModule],
  providers: [OutboxRepository, DeliveryAttemptService, WebhookDispatcher],
})
export class WebhookDeliveryModule {}
