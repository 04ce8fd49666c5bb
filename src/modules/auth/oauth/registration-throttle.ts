import { Inject, Injectable } from '@nestjs/common';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { REDIS, type Redis } from 'src/common/redis/redis.module.js';
import { REDIS_CONFIG, type RedisConfig } from 'src/common/redis/redis.config.js';
import { OAUTH_CONFIG, type OAuthConfig } from 'src/modules/auth/oauth/oauth.config.js';
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
    @Inject(REDIS_CONFIG) redisConfig: RedisConfig,
    @Inject(OAUTH_CONFIG) private readonly config: OAuthConfig,
  ) {
    this.storage = new RedisThrottlerStorage(redis, redisConfig.prefix);
  }

  async count(address: string | undefined): Promise<void> {
    const limit = this.config.registrationsPerHour;
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
