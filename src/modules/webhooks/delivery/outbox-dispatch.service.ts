import { Injectable } from '@nestjs/common';
import { newId } from 'src/common/ids/ids.js';
import { TransactionRunner } from 'src/database/transaction.js';
import {
  DeliveriesRepository,
  type NewDelivery,
} from 'src/modules/webhooks/delivery/deliveries.repository.js';
import { OutboxRepository } from 'src/modules/events/outbox.repository.js';
import { WebhookQueue } from 'src/modules/webhooks/delivery/webhook.queue.js';

/** Events turned into deliveries per transaction. */
const DISPATCH_BATCH = 200;
/** Due deliveries queued after a batch, of the webhooks it made deliveries for. */
const QUEUED_AFTER_BATCH = 1_000;

/**
 * Turns the outbox's committed events into deliveries: one per active webhook of the event's account
 * that takes it, made in the transaction that marks the event dispatched, then queues those first in
 * line. Dispatchers take turns (`OutboxRepository.undispatched`), so deliveries are made in the
 * events' order; a worker that dies mid-batch rolls it back, leaving its events to the next.
 */
@Injectable()
export class OutboxDispatchService {
  constructor(
    private readonly outbox: OutboxRepository,
    private readonly deliveries: DeliveriesRepository,
    private readonly queue: WebhookQueue,
    private readonly transactions: TransactionRunner,
  ) {}

  /**
   * Dispatches every committed event, a batch per transaction, until none is left or `signal` aborts
   * (the batch under way is finished first); how many deliveries were made.
   */
  async dispatchAll(signal?: AbortSignal): Promise<number> {
    let made = 0;
    for (;;) {
      const { events, deliveries } = await this.dispatchBatch();
      made += deliveries.length;
      if (deliveries.length > 0) {
        await this.queue.enqueueDue(QUEUED_AFTER_BATCH, [...new Set(deliveries.map((d) => d.webhookId))]);
      }
      if (events < DISPATCH_BATCH || signal?.aborted) return made;
    }
  }

  private dispatchBatch(): Promise<{ events: number; deliveries: NewDelivery[] }> {
    return this.transactions.run(async (tx) => {
      const events = await this.outbox.undispatched(tx, DISPATCH_BATCH);
      if (events.length === 0) return { events: 0, deliveries: [] };
      const subscribers = await this.deliveries.activeSubscribers(tx, [
        ...new Set(events.map((e) => e.accountId)),
      ]);
      const deliveries: NewDelivery[] = [];
      for (const event of events) {
        // The body every attempt sends, byte for byte, and that every signature covers.
        const body = JSON.stringify({
          id: event.id,
          event: event.event,
          timestamp: event.createdAt.toISOString(),
          data: event.data,
        });
        for (const webhook of subscribers) {
          if (webhook.account_id !== event.accountId || !webhook.events.includes(event.event)) continue;
          deliveries.push({
            id: newId('dlv'),
            webhookId: webhook.id,
            eventId: event.id,
            event: event.event,
            resourceId: event.resourceId,
            body,
          });
        }
      }
      await this.deliveries.create(tx, deliveries);
      await this.outbox.markDispatched(
        tx,
        events.map((e) => e.seq),
      );
      return { events: events.length, deliveries };
    });
  }
}
