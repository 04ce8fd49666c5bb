import { Module } from '@nestjs/common';
import { WebhooksController } from 'src/modules/webhooks/webhooks.controller.js';
import { WebhooksRepository } from 'src/modules/webhooks/webhooks.repository.js';
import { WebhooksService } from 'src/modules/webhooks/webhooks.service.js';

/** Webhook subscriptions and the delivery of the account's events to them (docs/webhooks.md). */
@Module({
  controllers: [WebhooksController],
  providers: [WebhooksService, WebhooksRepository],
})
export class WebhooksModule {}
