import { EventEmitter } from 'node:events';
import { jest } from '@jest/globals';
import type { Job, Queue } from 'bull';
import { pino } from 'pino';
import { readSection } from 'src/config/define.js';
import { webhooksSection } from 'src/modules/webhooks/webhooks.config.js';
import type { DeliveryAttemptService } from 'src/modules/webhooks/delivery/delivery-attempt.service.js';
import type { DeliveryLoopsService } from 'src/modules/webhooks/delivery/delivery-loops.service.js';
import { WebhookDeliveryProcessor } from 'src/modules/webhooks/delivery/webhook-delivery.processor.js';
import { DELIVER_JOB, type DeliverJob } from 'src/modules/webhooks/delivery/webhook.queue.js';
import { strictMock } from '../../../../test/utils/strict-mock.js';

function setUp(loops: Partial<DeliveryLoopsService> = {}) {
  const steps: string[] = [];
  let handler: ((job: Job<DeliverJob>) => Promise<void>) | undefined;
  const queue = Object.assign(new EventEmitter(), {
    process: jest.fn((_name: string, _concurrency: number, run: typeof handler) => {
      handler = run;
      return new Promise<void>(() => undefined);
    }),
    close: () => {
      steps.push('queue closed');
      return Promise.resolve();
    },
  });
  const attempt = jest.fn<DeliveryAttemptService['attempt']>(() => Promise.resolve());
  const processor = new WebhookDeliveryProcessor(
    queue as unknown as Queue<DeliverJob>,
    strictMock<DeliveryAttemptService>({ attempt }),
    strictMock<DeliveryLoopsService>(loops),
    readSection(webhooksSection, { WEBHOOK_CONCURRENCY: '3' }),
    pino({ level: 'silent' }),
  );
  processor.onApplicationBootstrap();
  return {
    processor,
    queue,
    attempt,
    steps,
    run: (job: DeliverJob) => handler!({ data: job } as Job<DeliverJob>),
  };
}

describe('WebhookDeliveryProcessor', () => {
  it('runs each job as one attempt of its delivery, WEBHOOK_CONCURRENCY at a time', async () => {
    const { queue, attempt, run } = setUp();
    expect(queue.process).toHaveBeenCalledWith(DELIVER_JOB, 3, expect.any(Function));
    await run({ deliveryId: 'dlv_1', attempts: 2 });
    expect(attempt).toHaveBeenCalledWith({ deliveryId: 'dlv_1', attempts: 2 });
  });

  it('closes the queue only once the loops, which queue jobs, have stopped', async () => {
    let stopped!: () => void;
    const { processor, steps } = setUp({
      stop: () =>
        new Promise<void>((resolve) => (stopped = resolve)).then(() => void steps.push('loops stopped')),
    });
    const closing = processor.onApplicationShutdown();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(steps).toEqual([]);
    stopped();
    await closing;
    expect(steps).toEqual(['loops stopped', 'queue closed']);
  });
});
