import { jest } from '@jest/globals';
import type { Tx, TransactionRunner } from 'src/database/transaction.js';
import type {
  DeliveriesRepository,
  NewDelivery,
} from 'src/modules/webhooks/delivery/deliveries.repository.js';
import { OutboxDispatchService } from 'src/modules/webhooks/delivery/outbox-dispatch.service.js';
import type { OutboxEvent, OutboxRepository } from 'src/modules/events/outbox.repository.js';
import type { WebhookQueue } from 'src/modules/webhooks/delivery/webhook.queue.js';
import { strictMock } from '../../../../test/utils/strict-mock.js';

const event = (seq: number, accountId: string, name: string, resourceId = `ds_${seq}`): OutboxEvent => ({
  seq: String(seq),
  id: `evt_${seq}`,
  accountId,
  event: name,
  resourceId,
  data: { dataset_id: resourceId },
  createdAt: new Date(Date.UTC(2026, 10, 27, 10, 0, seq)),
});

function setUp(
  batches: OutboxEvent[][],
  subscribers: { id: string; account_id: string; events: string[] }[] = [],
) {
  const tx = {} as Tx;
  const undispatched = jest.fn<OutboxRepository['undispatched']>(() =>
    Promise.resolve(batches.shift() ?? []),
  );
  const markDispatched = jest.fn<OutboxRepository['markDispatched']>(() => Promise.resolve());
  const create = jest.fn<DeliveriesRepository['create']>(() => Promise.resolve());
  const enqueueDue = jest.fn<WebhookQueue['enqueueDue']>(() => Promise.resolve());
  const service = new OutboxDispatchService(
    strictMock<OutboxRepository>({ undispatched, markDispatched }),
    strictMock<DeliveriesRepository>({ activeSubscribers: () => Promise.resolve(subscribers), create }),
    strictMock<WebhookQueue>({ enqueueDue }),
    strictMock<TransactionRunner>({ run: (work) => work(tx) }),
  );
  return { service, undispatched, markDispatched, create, enqueueDue };
}

describe('OutboxDispatchService.dispatchAll', () => {
  it("makes one delivery per active webhook of the event's account that takes it, with the event's body", async () => {
    const { service, create, markDispatched, enqueueDue } = setUp(
      [
        [
          event(1, 'acc_a', 'dataset.created'),
          event(2, 'acc_b', 'dataset.created'),
          event(3, 'acc_a', 'dataset.deleted'),
        ],
      ],
      [
        { id: 'wh_a1', account_id: 'acc_a', events: ['dataset.created'] },
        { id: 'wh_a2', account_id: 'acc_a', events: ['document.uploaded'] },
        { id: 'wh_b', account_id: 'acc_b', events: ['dataset.created', 'dataset.deleted'] },
      ],
    );
    expect(await service.dispatchAll()).toBe(2);
    const made = create.mock.calls[0][1];
    expect(made.map((d: NewDelivery) => [d.webhookId, d.eventId, d.resourceId])).toEqual([
      ['wh_a1', 'evt_1', 'ds_1'],
      ['wh_b', 'evt_2', 'ds_2'],
    ]);
    expect(made[0].id).toMatch(/^dlv_/);
    expect(made[0].body).toBe(
      '{"id":"evt_1","event":"dataset.created","timestamp":"2026-11-27T10:00:01.000Z","data":{"dataset_id":"ds_1"}}',
    );
    // The event nobody takes is dispatched all the same: it is not kept for a later subscriber.
    expect(markDispatched).toHaveBeenCalledWith(expect.anything(), ['1', '2', '3']);
    expect(enqueueDue).toHaveBeenCalledWith(1_000, ['wh_a1', 'wh_b']);
  });

  it('takes batch after batch until one comes back short, and queues nothing for events nobody takes', async () => {
    const full = Array.from({ length: 200 }, (_, i) => event(i + 1, 'acc_a', 'dataset.created'));
    const { service, undispatched, markDispatched, enqueueDue } = setUp([full, [event(201, 'acc_a', 'x')]]);
    expect(await service.dispatchAll()).toBe(0);
    expect(undispatched).toHaveBeenCalledTimes(2);
    expect(markDispatched).toHaveBeenCalledTimes(2);
    expect(enqueueDue).not.toHaveBeenCalled();
  });

  it('stops after the batch under way once its signal aborts', async () => {
    const full = Array.from({ length: 200 }, (_, i) => event(i + 1, 'acc_a', 'dataset.created'));
    const { service, undispatched } = setUp([full, full]);
    const stopping = new AbortController();
    stopping.abort();
    await service.dispatchAll(stopping.signal);
    expect(undispatched).toHaveBeenCalledTimes(1);
  });
});
