import { createServer, type Server } from 'node:http';
import { jest } from '@jest/globals';
import { pino } from 'pino';
import { coreSection } from 'src/config/core.config.js';
import { readSection } from 'src/config/define.js';
import { webhooksSection } from 'src/modules/webhooks/webhooks.config.js';
import type { TransactionRunner, Tx } from 'src/database/transaction.js';
import type {
  AttemptRecord,
  ClaimedDelivery,
  DeliveriesRepository,
} from 'src/modules/webhooks/delivery/deliveries.repository.js';
import { DeliveryAttemptService } from 'src/modules/webhooks/delivery/delivery-attempt.service.js';
import type { WebhookQueue } from 'src/modules/webhooks/delivery/webhook.queue.js';
import { strictMock } from '../../../../test/utils/strict-mock.js';

/** A receiver on 127.0.0.1 that answers every request with `status`, counting them. */
let server: Server;
let url: string;
let status = 200;
let received = 0;
beforeAll(async () => {
  server = createServer((request, response) => {
    received++;
    request.resume();
    response.writeHead(status).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));
beforeEach(() => {
  received = 0;
});

const claimed = (attempt: number): ClaimedDelivery => ({
  id: 'dlv_1',
  webhookId: 'wh_1',
  eventId: 'evt_1',
  event: 'dataset.updated',
  resourceId: 'ds_1',
  body: '{}',
  attempt,
  url,
  secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
});

/** The service over strict mocks; `steps` records what reaches the database, and each transaction's edges. */
function setUp(
  deliveries: Partial<DeliveriesRepository>,
  env: Record<string, string> = { WEBHOOK_RETRY_DELAYS_SECONDS: '60,300' },
) {
  const steps: string[] = [];
  const tx = {} as Tx;
  const settle = jest.fn<DeliveriesRepository['settle']>((_tx, record: AttemptRecord, next) => {
    steps.push(`settle ${record.outcome} ${'status' in next ? next.status : 'retry'}`);
    return Promise.resolve();
  });
  const enqueue = jest.fn<WebhookQueue['enqueue']>(() => Promise.resolve());
  const enqueueDue = jest.fn<WebhookQueue['enqueueDue']>(() => {
    steps.push('queue next in line');
    return Promise.resolve();
  });
  const logged: { msg: string; webhook_id?: string }[] = [];
  const service = new DeliveryAttemptService(
    strictMock<DeliveriesRepository>({ takeHourlySlot: () => Promise.resolve(true), settle, ...deliveries }),
    strictMock<WebhookQueue>({ enqueue, enqueueDue }),
    strictMock<TransactionRunner>({
      run: async (work) => {
        steps.push('begin');
        const result = await work(tx);
        steps.push('commit');
        return result;
      },
    }),
    readSection(webhooksSection, env),
    readSection(coreSection, env),
    pino({ level: 'warn' }, { write: (line: string) => void logged.push(JSON.parse(line)) }),
  );
  return { service, steps, settle, enqueue, enqueueDue, logged };
}

describe('DeliveryAttemptService.attempt', () => {
  it('sends nothing for an attempt the database does not give it', async () => {
    const { service, steps } = setUp({ claim: () => Promise.resolve(null) });
    await service.attempt({ deliveryId: 'dlv_1', attempts: 0 });
    expect(received).toBe(0);
    expect(steps).toEqual([]);
  });

  it('holds an attempt past the hourly limit until the next hour, without sending it', async () => {
    const deferToNextHour = jest.fn<DeliveriesRepository['deferToNextHour']>(() =>
      Promise.resolve(new Date()),
    );
    const { service, steps } = setUp({
      claim: () => Promise.resolve(claimed(1)),
      takeHourlySlot: () => Promise.resolve(false),
      deferToNextHour,
    });
    await service.attempt({ deliveryId: 'dlv_1', attempts: 0 });
    expect(deferToNextHour).toHaveBeenCalledWith('dlv_1');
    expect(received).toBe(0);
    expect(steps).toEqual([]);
  });

  it('retries a 5xx after the delay of its attempt, queueing the next attempt of the same delivery', async () => {
    status = 503;
    const { service, steps, settle, enqueue } = setUp({ claim: () => Promise.resolve(claimed(2)) });
    const before = Date.now();
    await service.attempt({ deliveryId: 'dlv_1', attempts: 1 });
    expect(received).toBe(1);
    expect(steps).toEqual(['begin', 'settle failed retry', 'commit']);
    const { retryAt } = settle.mock.calls[0][2] as { retryAt: Date };
    expect(retryAt.getTime()).toBeGreaterThanOrEqual(before + 300_000);
    expect(retryAt.getTime()).toBeLessThan(Date.now() + 300_000 + 1);
    expect(enqueue).toHaveBeenCalledWith([{ deliveryId: 'dlv_1', attempts: 2 }], 300_000);
  });

  it('fails a delivery for good once its retries are spent, and lets the next in line go', async () => {
    status = 503;
    const { service, steps } = setUp({
      claim: () => Promise.resolve(claimed(3)),
      lockForFailure: () => Promise.resolve(void steps.push('lock webhook')),
      recentOutcomes: () => Promise.resolve({ ended: 1, failed: 1 }),
    });
    await service.attempt({ deliveryId: 'dlv_1', attempts: 2 });
    expect(steps).toEqual(['begin', 'lock webhook', 'settle failed failed', 'commit', 'queue next in line']);
  });

  it('disables the webhook in the transaction of the failure that takes it past 80%', async () => {
    status = 410;
    const disable = jest.fn<DeliveriesRepository['disable']>(() => {
      steps.push('disable');
      return Promise.resolve(true);
    });
    const { service, steps, logged } = setUp(
      {
        claim: () => Promise.resolve(claimed(1)),
        lockForFailure: () => Promise.resolve(void steps.push('lock webhook')),
        recentOutcomes: () => Promise.resolve({ ended: 5, failed: 5 }),
        disable,
      },
      { WEBHOOK_DISABLE_AFTER_DELIVERIES: '5' },
    );
    await service.attempt({ deliveryId: 'dlv_1', attempts: 0 });
    expect(steps).toEqual([
      'begin',
      'lock webhook',
      'settle failed failed',
      'disable',
      'commit',
      'queue next in line',
    ]);
    expect(disable).toHaveBeenCalledWith(
      expect.anything(),
      'wh_1',
      '5 of its 5 deliveries in the last 24 hours failed',
    );
    expect(logged).toContainEqual(
      expect.objectContaining({ msg: 'webhook disabled for failing deliveries', webhook_id: 'wh_1' }),
    );
  });

  it('keeps a webhook failing 80% of its deliveries, or too few of them to judge', async () => {
    status = 410;
    for (const counted of [
      { ended: 5, failed: 4 },
      { ended: 4, failed: 4 },
    ]) {
      const { service, steps } = setUp(
        {
          claim: () => Promise.resolve(claimed(1)),
          lockForFailure: () => Promise.resolve(),
          recentOutcomes: () => Promise.resolve(counted),
        },
        { WEBHOOK_DISABLE_AFTER_DELIVERIES: '5' },
      );
      // The strict mock has no `disable`: calling it would fail the test.
      await service.attempt({ deliveryId: 'dlv_1', attempts: 0 });
      expect(steps).toContain('settle failed failed');
    }
  });

  it('settles a delivered attempt without counting failures', async () => {
    status = 204;
    const { service, steps } = setUp({ claim: () => Promise.resolve(claimed(1)) });
    await service.attempt({ deliveryId: 'dlv_1', attempts: 0 });
    expect(steps).toEqual(['begin', 'settle delivered delivered', 'commit', 'queue next in line']);
  });
});
