import { Module } from '@nestjs/common';
import { WebhookQueueModule } from 'src/modules/webhooks/delivery/webhook-queue.module.js';
import { DeliveryLogRepository } from 'src/modules/webhooks/delivery-log.repository.js';
import { WebhookDeliveriesService } from 'src/modules/webhooks/webhook-deliveries.service.js';
import { WebhooksController } from 'src/modules/webhooks/webhooks.controller.js';
import { WebhooksRepository } from 'src/modules/webhooks/webhooks.repository.js';
import { WebhooksService } from 'src/modules/webhooks/webhooks.service.js';

/** Webhook subscriptions and the delivery of the account's events to them (docs/webhooks.md). */
@Module({
  imports: [WebhookQueueModule],
  controllers: [WebhooksController],
  providers: [WebhooksService, WebhooksRepository, DeliveryLogRepository, WebhookDeliveriesService],
})
export class WebhooksModule {}
