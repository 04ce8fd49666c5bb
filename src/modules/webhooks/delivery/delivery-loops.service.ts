import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { WEBHOOKS_CONFIG, type WebhooksConfig } from 'src/modules/webhooks/webhooks.config.js';
import { DeliveriesRepository } from 'src/modules/webhooks/delivery/deliveries.repository.js';
import { OutboxDispatchService } from 'src/modules/webhooks/delivery/outbox-dispatch.service.js';
import { OutboxRepository } from 'src/modules/events/outbox.repository.js';
import { WebhookQueue } from 'src/modules/webhooks/delivery/webhook.queue.js';

/** Due deliveries the sweep queues at a time. */
const SWEEP_BATCH = 1_000;
const PURGE_EVERY_MS = 3_600_000;
/** The purge's first run, soon after boot: processes restarted more often than hourly purge too. */
const FIRST_PURGE_MS = 60_000;

/**
 * The timers of webhook delivery, in processes with ROLE `all` or `worker`, each loop one run at a
 * time, a failure logged and the loop going on:
 * - dispatch, every WEBHOOK_DISPATCH_INTERVAL_MS: the outbox's committed events into deliveries
 *   (`OutboxDispatchService`);
 * - sweep, every WEBHOOK_SWEEP_SECONDS: queues due deliveries whose job was lost (Redis down, a
 *   process killed, an attempt that threw, a claim whose lease ran out);
 * - purge, hourly: what is past WEBHOOK_RETENTION_DAYS.
 */
@Injectable()
export class DeliveryLoopsService implements OnApplicationBootstrap, OnApplicationShutdown {
  /** Each loop's next run. */
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** The runs under way, which stopping waits for. */
  private readonly running = new Set<Promise<void>>();
  private readonly stopping = new AbortController();

  constructor(
    private readonly dispatcher: OutboxDispatchService,
    private readonly outbox: OutboxRepository,
    private readonly deliveries: DeliveriesRepository,
    private readonly queue: WebhookQueue,
    @Inject(WEBHOOKS_CONFIG) private readonly config: WebhooksConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    const { dispatchIntervalMs, sweepSeconds } = this.config;
    this.every(dispatchIntervalMs, 'dispatch', () => this.dispatcher.dispatchAll(this.stopping.signal));
    this.every(sweepSeconds * 1000, 'sweep', () => this.queue.enqueueDue(SWEEP_BATCH));
    this.every(PURGE_EVERY_MS, 'purge', () => this.purge(), FIRST_PURGE_MS);
  }

  onApplicationShutdown(): Promise<void> {
    return this.stop();
  }

  /** Stops the loops and waits for the runs under way; the processor calls it before closing the queue. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.timers.forEach((timer) => clearTimeout(timer));
    await Promise.all(this.running);
  }

  /** Deletes what is past retention: ended deliveries (with their attempts), then dispatched events. */
  private async purge(): Promise<void> {
    const days = this.config.retentionDays;
    await this.deliveries.purgeEnded(days);
    await this.outbox.purgeDispatched(days);
  }

  /** Runs `work` every `intervalMs`, one run at a time; a failure is logged and the loop goes on. */
  private every(intervalMs: number, name: string, work: () => Promise<unknown>, firstMs = intervalMs): void {
    const schedule = (inMs = intervalMs) => {
      if (this.stopping.signal.aborted) return;
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
