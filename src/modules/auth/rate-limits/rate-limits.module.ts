import { Module } from '@nestjs/common';
import { ThrottlerModule, type ThrottlerModuleOptions, type ThrottlerStorage } from '@nestjs/throttler';
import type { Request } from 'express';
import { REDIS, type Redis } from 'src/common/redis/redis.module.js';
import { REDIS_CONFIG, type RedisConfig } from 'src/common/redis/redis.config.js';
import { RATE_LIMITS_CONFIG, type RateLimits } from 'src/modules/auth/rate-limits/rate-limits.config.js';
import { ANONYMOUS } from 'src/modules/auth/auth.types.js';
import { BUDGETS, RateLimitGuard } from 'src/modules/auth/rate-limits/rate-limit.guard.js';
import { tierLimit } from 'src/modules/auth/rate-limits/rate-limits.js';
import { RedisThrottlerStorage } from 'src/modules/auth/rate-limits/redis-throttler.storage.js';

/** The budgets: the caller's tier's, and the one of the public routes that do work, per client network. */
export function rateLimitOptions(limits: RateLimits, storage: ThrottlerStorage): ThrottlerModuleOptions {
  return {
    storage,
    throttlers: [
      {
        name: BUDGETS.tier,
        ttl: limits.windowSeconds * 1000,
        limit: (context) => {
          const principal = context.switchToHttp().getRequest<Request>().principal ?? ANONYMOUS;
          return tierLimit(limits, principal.tier);
        },
      },
      {
        name: BUDGETS.authEndpoints,
        ttl: limits.authEndpointsWindowSeconds * 1000,
        limit: limits.authEndpoints,
      },
    ],
  };
}

/**
 * The rate limits: the budgets, counted in Redis so that every process shares them, and the guard
 * that counts each request against one (GuardsModule places it among the global guards).
 */
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [RATE_LIMITS_CONFIG, REDIS_CONFIG, REDIS],
      useFactory: (limits: RateLimits, redisConfig: RedisConfig, redis: Redis) =>
        rateLimitOptions(limits, new RedisThrottlerStorage(redis, redisConfig.prefix)),
    }),
  ],
  providers: [RateLimitGuard],
  exports: [RateLimitGuard],
})
export class RateLimitsModule {}
