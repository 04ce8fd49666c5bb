import { Inject, Injectable } from '@nestjs/common';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { REDIS, type Redis } from 'src/common/redis/redis.module.js';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';
import { networkOf } from 'src/modules/auth/rate-limits/rate-limits.js';
import { RedisThrottlerStorage } from 'src/modules/auth/rate-limits/redis-throttler.storage.js';

const WINDOW_MS = 3_600_000;

/**
 * Client registration is open to anyone (that is how MCP clients arrive), so it is limited per client
 * network (`OAUTH_REGISTRATIONS_PER_HOUR`), counted in Redis for every process.
 */
@Injectable()
export class RegistrationThrottle {
  private readonly storage: RedisThrottlerStorage;

  constructor(
    @Inject(REDIS) redis: Redis,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.storage = new RedisThrottlerStorage(redis, config.redisPrefix);
  }

  async count(address: string | undefined): Promise<void> {
    const limit = this.config.oauthRegistrationsPerHour;
    const key = `oauth-register:${networkOf(address)}`;
    const record = await this.storage.increment(key, WINDOW_MS, limit);
    if (record.isBlocked) {
      throw CommonErrors.rateLimited(
        record.timeToExpire,
        `Too many client registrations; retry in ${record.timeToExpire} seconds`,
        { limit, window_seconds: WINDOW_MS / 1000 },
      );
    }
  }
}
