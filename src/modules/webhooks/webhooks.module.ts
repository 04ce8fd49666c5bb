import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WebhookQueueModule } from 'src/modules/webhooks/delivery/webhook-queue.module.js';
import { DeliveryLogRepository } from 'src/modules/webhooks/delivery-log.repository.js';
import { DeliveryLogService } from 'src/modules/webhooks/delivery-log.service.js';
import { TestDeliveryService } from 'src/modules/webhooks/test-delivery.service.js';
import { WebhookEntity } from 'src/modules/webhooks/webhook.entity.js';
import { WebhooksController } from 'src/modules/webhooks/webhooks.controller.js';
import { WebhooksRepository } from 'src/modules/webhooks/webhooks.repository.js';
import { WebhooksService } from 'src/modules/webhooks/webhooks.service.js';

/**
 * The webhooks API (docs/webhooks.md): subscriptions, the delivery log with redelivery, and test
 * deliveries. Workers deliver through `WebhookDeliveryModule`.
 */
@Module({
  imports: [WebhookQueueModule, TypeOrmModule.forFeature([WebhookEntity])],
  controllers: [WebhooksController],
  providers: [
    WebhooksService,
    WebhooksRepository,
    DeliveryLogRepository,
    DeliveryLogService,
    TestDeliveryService,
  ],
})
export class WebhooksModule {}
