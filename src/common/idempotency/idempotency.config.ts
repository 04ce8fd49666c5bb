import { type ConfigOf, int, section } from 'src/config/define.js';

export const idempotencySection = section('IDEMPOTENCY_CONFIG', {
  title: 'Idempotency',
  variables: {
    ttlHours: int('IDEMPOTENCY_TTL_HOURS', {
      default: 24,
      min: 1,
      max: 24 * 30,
      description: 'how long an Idempotency-Key replays its response',
    }),
  },
});

export const IDEMPOTENCY_CONFIG = idempotencySection.token;
export type IdempotencyConfig = ConfigOf<typeof idempotencySection>;
