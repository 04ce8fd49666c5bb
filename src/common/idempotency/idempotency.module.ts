import {
  Global,
  Inject,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { Logger } from 'pino';
import { IdempotencyKeyEntity } from 'src/common/idempotency/idempotency-key.entity.js';
import { IdempotencyInterceptor } from 'src/common/idempotency/idempotency.interceptor.js';
import { IdempotencyRepository } from 'src/common/idempotency/idempotency.repository.js';
import { IdempotentReplays } from 'src/common/idempotency/idempotent-replays.js';
import { LOGGER } from 'src/common/logging/logger.js';

const PURGE_INTERVAL_MS = 60 * 60 * 1000;

/** Idempotency for every creating POST; expired records are purged hourly. */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([IdempotencyKeyEntity])],
  providers: [IdempotencyRepository, IdempotencyInterceptor, IdempotentReplays],
  exports: [IdempotencyRepository, IdempotencyInterceptor, IdempotentReplays],
})
export class IdempotencyModule implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly repository: IdempotencyRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      this.repository
        .deleteExpired()
        .catch((err: unknown) => this.logger.warn({ err }, 'idempotency purge failed'));
    }, PURGE_INTERVAL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
