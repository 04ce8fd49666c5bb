import { Module } from '@nestjs/common';
import { DeliveryLoopsService } from 'src/modules/webhooks/delivery/delivery-loops.service.js';
import { OutboxDispatchService } from 'src/modules/webhooks/delivery/outbox-dispatch.service.js';
import { EventsModule } from 'src/modules/events/events.module.js';
import { DeliveryAttemptService } from 'src/modules/webhooks/delivery/delivery-attempt.service.js';
import { WebhookDeliveryProcessor } from 'src/modules/webhooks/delivery/webhook-delivery.processor.js';
import { WebhookQueueModule } from 'src/modules/webhooks/delivery/webhook-queue.module.js';

/**
 * Delivering the account's events to webhooks, the workers' side: the queue's processor and the
 * attempts it runs, and the loops that dispatch the outbox, sweep for lost jobs and purge.
 * Imported only where documents are processed too: ROLE `all` (default) or `worker`.
 */
@Module({
  imports: [EventsModule, WebhookQueueModule],
  providers: [OutboxDispatchService, DeliveryAttemptService, DeliveryLoopsService, WebhookDeliveryProcessor],
})
export class WebhookDeliveryModule {}
