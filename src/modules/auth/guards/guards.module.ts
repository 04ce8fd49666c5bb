import { Module } from '@nestjs/common';
import { APP_GUARD, DiscoveryModule } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { ApiKeysModule } from 'src/modules/auth/api-keys/api-keys.module.js';
import { ApiKeysService } from 'src/modules/auth/api-keys/api-keys.service.js';
import { AccessGuard } from 'src/modules/auth/guards/access.guard.js';
import { AuthenticationGuard } from 'src/modules/auth/guards/authentication.guard.js';
import { BearerStrategy, TOKEN_VERIFIERS } from 'src/modules/auth/guards/bearer.strategy.js';
import { EarlyStartGuard } from 'src/modules/auth/guards/early-start.guard.js';
import { EarlyStartSeam } from 'src/modules/auth/guards/early-start.seam.js';
import { OAuthModule } from 'src/modules/auth/oauth/oauth.module.js';
import { TokensService } from 'src/modules/auth/oauth/tokens.service.js';
import { RateLimitGuard } from 'src/modules/auth/rate-limits/rate-limit.guard.js';
import { RateLimitsModule } from 'src/modules/auth/rate-limits/rate-limits.module.js';
import { SessionsModule } from 'src/modules/auth/sessions/sessions.module.js';

/**
 * The global guards, in the order they run on every request:
 * - AuthenticationGuard finds out who is calling, and refuses nobody (a bad credential is kept for
 *   AccessGuard), so that the guards after it know the caller;
 * - EarlyStartGuard starts the work a route declares for a caller who authenticated, so that it
 *   overlaps the next two;
 * - RateLimitGuard counts the request against the caller's budget, before anything refuses it;
 * - AccessGuard applies the route's access rule.
 */
export const GLOBAL_GUARDS = [AuthenticationGuard, EarlyStartGuard, RateLimitGuard, AccessGuard] as const;

/** Every request's authentication, early work, rate limit and access check, as APP_GUARDs in GLOBAL_GUARDS' order. */
@Module({
  imports: [ApiKeysModule, SessionsModule, OAuthModule, RateLimitsModule, PassportModule, DiscoveryModule],
  providers: [
    BearerStrategy,
    {
      provide: TOKEN_VERIFIERS,
      inject: [ApiKeysService, TokensService],
      useFactory: (...verifiers: unknown[]) => verifiers,
    },
    EarlyStartSeam,
    AuthenticationGuard,
    EarlyStartGuard,
    AccessGuard,
    ...GLOBAL_GUARDS.map((guard) => ({ provide: APP_GUARD, useExisting: guard })),
  ],
  exports: [EarlyStartSeam],
})
export class GuardsModule {}
