import { jest } from '@jest/globals';
import { pino } from 'pino';
import { readSection } from 'src/config/define.js';
import { webhooksSection } from 'src/modules/webhooks/webhooks.config.js';
import type { DeliveriesRepository } from 'src/modules/webhooks/delivery/deliveries.repository.js';
import { DeliveryLoopsService } from 'src/modules/webhooks/delivery/delivery-loops.service.js';
import type { OutboxDispatchService } from 'src/modules/webhooks/delivery/outbox-dispatch.service.js';
import type { OutboxRepository } from 'src/modules/events/outbox.repository.js';
import type { WebhookQueue } from 'src/modules/webhooks/delivery/webhook.queue.js';
import { strictMock } from '../../../../test/utils/strict-mock.js';
import { until } from '../../../../test/utils/until.js';

function setUp(dispatchAll: OutboxDispatchService['dispatchAll']) {
  const logged: { msg: string; loop?: string }[] = [];
  const enqueueDue = jest.fn<WebhookQueue['enqueueDue']>(() => Promise.resolve());
  const loops = new DeliveryLoopsService(
    strictMock<OutboxDispatchService>({ dispatchAll }),
    strictMock<OutboxRepository>({}),
    strictMock<DeliveriesRepository>({}),
    strictMock<WebhookQueue>({ enqueueDue }),
    readSection(webhooksSection, { WEBHOOK_DISPATCH_INTERVAL_MS: '10', WEBHOOK_SWEEP_SECONDS: '1' }),
    pino({ level: 'warn' }, { write: (line: string) => void logged.push(JSON.parse(line)) }),
  );
  return { loops, logged, enqueueDue };
}

describe('DeliveryLoopsService', () => {
  let loops: DeliveryLoopsService | undefined;
  afterEach(() => loops?.stop());

  it('waits, when stopped, for the dispatch under way, tells it to stop, and runs no other', async () => {
    let finish!: () => void;
    const signals: AbortSignal[] = [];
    const dispatchAll = jest.fn((signal?: AbortSignal) => {
      signals.push(signal!);
      return new Promise<number>((resolve) => (finish = () => resolve(0)));
    });
    ({ loops } = setUp(dispatchAll));
    loops.onApplicationBootstrap();
    await until(() => dispatchAll.mock.calls.length === 1, 2_000);
    let stopped = false;
    const stopping = loops.stop().then(() => (stopped = true));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(signals[0].aborted).toBe(true);
    expect(stopped).toBe(false);
    finish();
    await stopping;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(dispatchAll).toHaveBeenCalledTimes(1);
  });

  it('logs a run that fails and runs the loop again', async () => {
    const dispatchAll = jest.fn<OutboxDispatchService['dispatchAll']>();
    dispatchAll.mockRejectedValueOnce(new Error('connection refused')).mockResolvedValue(0);
    const set = setUp(dispatchAll);
    loops = set.loops;
    loops.onApplicationBootstrap();
    await until(() => dispatchAll.mock.calls.length >= 2, 2_000);
    expect(set.logged).toContainEqual(
      expect.objectContaining({ msg: 'webhook loop failed; it goes on', loop: 'dispatch' }),
    );
  });

  it('sweeps every WEBHOOK_SWEEP_SECONDS for the due deliveries of every webhook', async () => {
    const set = setUp(() => Promise.resolve(0));
    loops = set.loops;
    loops.onApplicationBootstrap();
    await until(() => set.enqueueDue.mock.calls.length > 0, 3_000);
    expect(set.enqueueDue).toHaveBeenCalledWith(1_000);
  });
});
