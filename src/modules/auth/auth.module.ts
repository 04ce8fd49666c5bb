import { Module } from '@nestjs/common';
import { APP_GUARD, DiscoveryModule } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { ThrottlerModule } from '@nestjs/throttler';
import type { Request } from 'express';
import { REDIS, type Redis } from 'src/common/redis/redis.module.js';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';
import { AccessGuard } from 'src/modules/auth/access.guard.js';
import { ApiKeysModule } from 'src/modules/auth/api-keys/api-keys.module.js';
import { ApiKeysService } from 'src/modules/auth/api-keys/api-keys.service.js';
import { AuthenticationGuard } from 'src/modules/auth/authentication.guard.js';
import { ANONYMOUS, TOKEN_VERIFIERS } from 'src/modules/auth/auth.types.js';
import { BearerStrategy } from 'src/modules/auth/bearer.strategy.js';
import { EarlyStartGuard } from 'src/modules/auth/early-start.js';
import { OAuthModule } from 'src/modules/auth/oauth/oauth.module.js';
import { TokensService } from 'src/modules/auth/oauth/tokens.service.js';
import { BUDGETS, RateLimitGuard } from 'src/modules/auth/rate-limit.guard.js';
import { tierLimit } from 'src/modules/auth/rate-limits.js';
import { RedisThrottlerStorage } from 'src/modules/auth/redis-throttler.storage.js';
import { SessionsModule } from 'src/modules/auth/sessions/sessions.module.js';

@Module({
  imports: [
    ApiKeysModule,
    SessionsModule,
    OAuthModule,
    PassportModule,
    DiscoveryModule,
    ThrottlerModule.forRootAsync({
      inject: [APP_CONFIG, REDIS],
      useFactory: (config: AppConfig, redis: Redis) => ({
        storage: new RedisThrottlerStorage(redis, config.redisPrefix),
        throttlers: [
          {
            name: BUDGETS.tier,
            ttl: config.rateLimits.windowSeconds * 1000,
            limit: (context) => {
              const principal = context.switchToHttp().getRequest<Request>().principal ?? ANONYMOUS;
              return tierLimit(config.rateLimits, principal.tier);
            },
          },
          {
            name: BUDGETS.authEndpoints,
            ttl: config.rateLimits.authEndpointsWindowSeconds * 1000,
            limit: config.rateLimits.authEndpoints,
          },
        ],
      }),
    }),
  ],
  providers: [
    BearerStrategy,
    {
      provide: TOKEN_VERIFIERS,
      inject: [ApiKeysService, TokensService],
      useFactory: (...verifiers: unknown[]) => verifiers,
    },
    // Global guards run in this order: who is calling, (work a route starts early for a known caller),
    // how much they have left, what they may do.
    { provide: APP_GUARD, useClass: AuthenticationGuard },
    { provide: APP_GUARD, useClass: EarlyStartGuard },
    { provide: APP_GUARD, useClass: RateLimitGuard },
    { provide: APP_GUARD, useClass: AccessGuard },
  ],
})
export class AuthModule {}
