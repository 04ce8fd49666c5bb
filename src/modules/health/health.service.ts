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

  async readiness(): Promise<Readiness> {
    const [postgres, redis] = await Promise.all([
      check('postgres', () => this.db.query('SELECT 1'), this.logger),
      check('redis', () => this.redis.ping(), this.logger),
    ]);
    return {
      ready: postgres.status === 'ok' && redis.status === 'ok',
      checks: { postgres, redis },
      search: this.embedding.status(),
    };
  }
}
