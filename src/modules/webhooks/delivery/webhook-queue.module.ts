import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { BullRootModule } from 'src/common/queue/bull-root.module.js';
import { DeliveriesRepository } from 'src/modules/webhooks/delivery/deliveries.repository.js';
import { WEBHOOK_QUEUE, WebhookQueue } from 'src/modules/webhooks/delivery/webhook.queue.js';

const webhookQueue = BullModule.registerQueue({ name: WEBHOOK_QUEUE });

/**
 * The webhooks queue, with the deliveries' repository whose order `WebhookQueue.enqueueDue` reads: for
 * the API (redelivery) and the workers, which claim and settle through the same repository.
 */
@Module({
  imports: [BullRootModule, webhookQueue],
  providers: [WebhookQueue, DeliveriesRepository],
  exports: [WebhookQueue, DeliveriesRepository, webhookQueue],
})
export class WebhookQueueModule {}
