import { bool, type ConfigOf, custom, int, section } from 'src/config/define.js';

const DEFAULT_RETRY_DELAYS_SECONDS = [60, 300, 1_800];

/** Comma-separated whole seconds, such as `60,300,1800`: the waits before each retry. */
function retryDelays(name: string) {
  return custom(name, {
    defaultText: `\`${DEFAULT_RETRY_DELAYS_SECONDS.join(',')}\``,
    description: 'waits before each retry of a delivery that failed with a 5xx, a timeout or no connection',
    parse: (value, reading) => {
      if (value === undefined) return DEFAULT_RETRY_DELAYS_SECONDS;
      const delays = value.split(',').map((entry) => Number(entry.trim()));
      if (
        delays.length === 0 ||
        delays.length > 10 ||
        !delays.every((d) => Number.isInteger(d) && d >= 0 && d <= 86_400)
      ) {
        reading.problem(
          `${name} must be up to 10 comma-separated whole seconds (0-86400), such as 60,300,1800`,
        );
        return DEFAULT_RETRY_DELAYS_SECONDS;
      }
      return delays;
    },
  });
}

/** Webhook delivery (docs/webhooks.md). */
export const webhooksSection = section('WEBHOOKS_CONFIG', {
  title: 'Webhooks',
  variables: {
    /** How long an attempt waits for the receiver's answer. */
    timeoutMs: int('WEBHOOK_TIMEOUT_MS', {
      default: 5_000,
      min: 100,
      max: 60_000,
      description: 'how long a delivery attempt waits for the receiver',
    }),
    /** The waits before each retry of a delivery that failed for a reason that may pass. */
    retryDelaysSeconds: retryDelays('WEBHOOK_RETRY_DELAYS_SECONDS'),
    secretGraceHours: int('WEBHOOK_SECRET_GRACE_HOURS', {
      default: 24,
      min: 0,
      max: 24 * 30,
      description: 'how long a rotated secret keeps signing beside the new one',
    }),
    /** A receiver on the same network; never on the Internet. */
    allowPrivate: bool('WEBHOOK_ALLOW_PRIVATE', {
      default: false,
      description:
        'deliver to private and link-local addresses (loopback is allowed outside production anyway)',
    }),
    hourlyLimit: int('WEBHOOK_HOURLY_LIMIT', {
      default: 1_000,
      min: 1,
      max: 1_000_000,
      description: 'attempts per webhook per clock hour; more wait for the next hour',
    }),
    disableAfterDeliveries: int('WEBHOOK_DISABLE_AFTER_DELIVERIES', {
      default: 20,
      min: 1,
      max: 1_000_000,
      description: 'deliveries in 24 hours before a webhook failing more than 80% of them is disabled',
    }),
    retentionDays: int('WEBHOOK_RETENTION_DAYS', {
      default: 30,
      min: 1,
      max: 3_650,
      description: 'how long the delivery log and dispatched events are kept',
    }),
    /** Deliveries one worker process sends at once. */
    concurrency: int('WEBHOOK_CONCURRENCY', {
      default: 8,
      min: 1,
      max: 256,
      description: 'deliveries a worker sends at once',
    }),
    dispatchIntervalMs: int('WEBHOOK_DISPATCH_INTERVAL_MS', {
      default: 500,
      min: 10,
      max: 60_000,
      description: 'how often a worker reads new events from the outbox',
    }),
    /** Due deliveries whose job was lost: Redis down, a process killed. */
    sweepSeconds: int('WEBHOOK_SWEEP_SECONDS', {
      default: 10,
      min: 1,
      max: 3_600,
      description: 'how often a worker requeues due deliveries whose job was lost',
    }),
  },
});

export const WEBHOOKS_CONFIG = webhooksSection.token;
export type WebhooksConfig = ConfigOf<typeof webhooksSection>;
