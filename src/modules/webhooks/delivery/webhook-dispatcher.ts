import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import type { Logger } from 'pino';
import { newId } from 'src/common/ids/ids.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { TransactionRunner } from 'src/database/transaction.js';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';
import {
  DeliveriesRepository,
  type NewDelivery,
} from 'src/modules/webhooks/delivery/deliveries.repository.js';
import { OutboxRepository } from 'src/modules/webhooks/delivery/outbox.repository.js';
import { DeliveryAttemptService } from 'src/modules/webhooks/delivery/delivery-attempt.service.js';
import {
  DELIVER_JOB,
  type DeliverJob,
  WEBHOOK_QUEUE,
  WebhookQueue,
} from 'src/modules/webhooks/delivery/webhook.queue.js';

/** Events turned into deliveries per transaction. */
const DISPATCH_BATCH = 200;
/** Due deliveries the sweep queues at a time. */
const SWEEP_BATCH = 1_000;
const PURGE_EVERY_MS = 3_600_000;

/**
 * The delivery side of webhooks, in processes that process (ROLE `all` or `worker`):
 * - the dispatcher turns committed events of the outbox into deliveries to each active webhook that
 *   takes them, and queues those first in line. Its transaction locks the events it reads (others are
 *   skipped, not waited for), so several workers share the work and a worker that dies mid-batch
 *   leaves its events to the next;
 * - the queue's processor runs one attempt per job (`DeliveryAttemptService`);
 * - the sweep queues due deliveries whose job was lost (Redis down, a process killed), and deletes
 *   what is past `WEBHOOK_RETENTION_DAYS`.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  /** Each loop's next run. */
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** The runs under way, which shutdown waits for. */
  private readonly running = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly outbox: OutboxRepository,
    private readonly deliveries: DeliveriesRepository,
    private readonly attempts: DeliveryAttemptService,
    private readonly queue: WebhookQueue,
    private readonly transactions: TransactionRunner,
    @InjectQueue(WEBHOOK_QUEUE) private readonly bull: Queue<DeliverJob>,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    const { concurrency, dispatchIntervalMs, sweepSeconds } = this.config.webhooks;
    // Not awaited: `process` resolves only when the queue closes.
    this.bull
      .process(DELIVER_JOB, concurrency, (job: Job<DeliverJob>) => this.attempts.attempt(job.data))
      .catch((err: unknown) => this.logger.error({ err }, 'webhooks queue processor stopped'));
    // An attempt that throws (the database unreachable mid-way) leaves its delivery to the sweep.
    this.bull.on('failed', (job: Job<DeliverJob> | null, err: Error) =>
      this.logger.warn(
        { err, delivery_id: job?.data.deliveryId },
        'webhook attempt failed; the sweep retries it',
      ),
    );
    this.every(dispatchIntervalMs, 'dispatch', () => this.dispatchAll());
    this.every(sweepSeconds * 1000, 'sweep', () => this.sweep());
    // The purge's first run is soon after boot: processes restarted more often than hourly purge too.
    this.every(PURGE_EVERY_MS, 'purge', () => this.purge(this.config.webhooks.retentionDays), 60_000);
  }

  /** Stops the loops, lets the one under way finish, then closes the queue (which waits for its jobs). */
  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    this.timers.forEach((timer) => clearTimeout(timer));
    await Promise.all(this.running);
    await this.bull.close();
  }

  /** Turns every committed event into its deliveries, a batch per transaction; how many were made. */
  async dispatchAll(): Promise<number> {
    let made = 0;
    for (;;) {
      const { events, deliveries } = await this.dispatchBatch();
      made += deliveries.length;
      if (deliveries.length > 0) {
        const webhooks = [...new Set(deliveries.map((d) => d.webhookId))];
        await this.queue.enqueueDue(SWEEP_BATCH, webhooks);
      }
      if (events < DISPATCH_BATCH || this.closed) return made;
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

  /** Deletes what is past retention: ended deliveries (with their attempts), then dispatched events. */
  private async purge(days: number): Promise<void> {
    await this.deliveries.purgeEnded(days);
    await this.outbox.purgeDispatched(days);
  }

  private async sweep(): Promise<void> {
    await this.queue.enqueueDue(SWEEP_BATCH);
  }

  /** Runs `work` every `intervalMs`, one run at a time; a failure is logged and the loop goes on. */
  private every(intervalMs: number, name: string, work: () => Promise<unknown>, firstMs = intervalMs): void {
    const schedule = (inMs = intervalMs) => {
      if (this.closed) return;
      const timer = setTimeout(() => {
        const run = work()
          .then(() => undefined)
          .catch((err: unknown) => this.logger.warn({ err, loop: name }, 'webhook loop failed; it goes on'))
          .finally(() => {
            this.running.delete(run);
            schedule();
          });
        this.running.add(run);
      }, inMs);
      timer.unref();
      this.timers.set(name, timer);
    };
    schedule(firstMs);
  }
}
