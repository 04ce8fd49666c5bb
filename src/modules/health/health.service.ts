import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Logger } from 'pino';
import { withDeadline } from 'src/common/async/deadline.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { REDIS, type Redis } from 'src/common/redis/redis.module.js';
import { EmbeddingService, type EmbeddingStatus } from 'src/modules/embeddings/embedding.service.js';

export interface CheckResult {
  status: 'ok' | 'error';
}

export interface Readiness {
  ready: boolean;
  checks: { postgres: CheckResult; redis: CheckResult };
  search: EmbeddingStatus;
}

const CHECK_TIMEOUT_MS = 2_000;
/**
 * How long the checks' outcome answers every caller: /ready is open and not rate-limited (probes come
 * often, from few addresses), so a flood of it costs the database one statement a second at most.
 */
const CHECKS_SHARED_MS = 1_000;

/** Runs one probe; the reason of a failure is logged, not returned: /ready is open to anyone. */
async function check(name: string, probe: () => Promise<unknown>, logger: Logger): Promise<CheckResult> {
  try {
    await withDeadline(probe(), CHECK_TIMEOUT_MS, () => new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`));
    return { status: 'ok' };
  } catch (err) {
    logger.warn({ err, check: name }, 'readiness check failed');
    return { status: 'error' };
  }
}

@Injectable()
export class HealthService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly embedding: EmbeddingService,
  ) {}

  private shared: { checks: Promise<Readiness['checks']>; until: number } | null = null;

  async readiness(): Promise<Readiness> {
    const checks = await this.checks();
    return {
      ready: checks.postgres.status === 'ok' && checks.redis.status === 'ok',
      checks,
      search: this.embedding.status(),
    };
  }

  /** The checks under way or finished within the last `CHECKS_SHARED_MS`, else new ones. */
  private checks(): Promise<Readiness['checks']> {
    const now = Date.now();
    if (this.shared && now < this.shared.until) return this.shared.checks;
    const checks = Promise.all([
      check('postgres', () => this.db.query('SELECT 1'), this.logger),
      check('redis', () => this.redis.ping(), this.logger),
    ]).then(([postgres, redis]) => {
      // Shared from when they ended, so that a slow check is not run again at once.
      this.shared = { checks, until: Date.now() + CHECKS_SHARED_MS };
      return { postgres, redis };
    });
    this.shared = { checks, until: Number.POSITIVE_INFINITY };
    return checks;
  }
}
