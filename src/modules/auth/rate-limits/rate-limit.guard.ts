import { type ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { ThrottlerGuard, type ThrottlerRequest } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { type AppError, CommonErrors } from 'src/common/errors/app-error.js';
import { ROUTE_ACCESS, type RouteAccess } from 'src/modules/auth/auth.decorators.js';
import { networkOf, rateLimitTracker } from 'src/modules/auth/rate-limits/rate-limits.js';
import type { WindowRecord } from 'src/modules/auth/rate-limits/redis-throttler.storage.js';

const ANSWERS_RATE_LIMIT = 'answers_rate_limit';

/**
 * The route answers a spent budget itself, from `request.rateLimitError` (the MCP endpoint answers a
 * tool call with a tool error an agent can read). It must do no work for such a request.
 */
export const AnswersRateLimit = () => SetMetadata(ANSWERS_RATE_LIMIT, true);

declare module 'express-serve-static-core' {
  interface Request {
    /** A spent budget on a route that answers it itself (`AnswersRateLimit`). */
    rateLimitError?: AppError;
  }
}

/** The budgets (`ThrottlerModule`'s throttlers, by name): one applies to each rate-limited route. */
export const BUDGETS = {
  /** The caller's tier's, per credential (anonymous callers: per network). */
  tier: 'hourly',
  /** Public routes that do work (signing in, the OAuth endpoints), per client network. */
  authEndpoints: 'auth-endpoints',
} as const;

/**
 * A global guard that runs after authentication (GLOBAL_GUARDS), so the limit is the caller's tier's, or on a public
 * route the client network's budget for the sign-in and OAuth endpoints (a public route declared
 * `limit: 'none'` is not counted). Sets X-RateLimit-Limit / -Remaining / -Reset (Unix seconds) on
 * every rate-limited response, and answers 429 rate_limit_exceeded with retry_after when the
 * window's budget is spent.
 */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  protected override shouldSkip(context: ExecutionContext): Promise<boolean> {
    const access = this.access(context);
    return Promise.resolve(
      context.getType() !== 'http' || (access?.kind === 'public' && access.limit === 'none'),
    );
  }

  protected override async handleRequest({
    context,
    limit,
    ttl,
    throttler,
    blockDuration,
  }: ThrottlerRequest) {
    const request = context.switchToHttp().getRequest<Request>();
    const response = context.switchToHttp().getResponse<Response>();
    const budget = this.access(context)?.kind === 'public' ? BUDGETS.authEndpoints : BUDGETS.tier;
    if (throttler.name !== budget) return true;
    const tracker = budget === BUDGETS.tier ? rateLimitTracker(request) : `ip:${networkOf(request.ip)}`;
    const key = `rl:${budget}:${tracker}`;
    let record: Awaited<ReturnType<typeof this.storageService.increment>>;
    try {
      record = await this.storageService.increment(
        key,
        ttl,
        limit,
        blockDuration,
        throttler.name ?? 'default',
      );
    } catch (err) {
      // Fail open: an outage of the rate-limit store must not take the API down with it.
      request.log.warn({ err }, 'rate limit store unavailable; request not counted');
      return true;
    }

    response.setHeader('X-RateLimit-Limit', String(limit));
    response.setHeader('X-RateLimit-Remaining', String(Math.max(0, limit - record.totalHits)));
    const resetAt =
      (record as Partial<WindowRecord>).resetAt ?? Math.ceil(Date.now() / 1000) + record.timeToExpire;
    response.setHeader('X-RateLimit-Reset', String(resetAt));
    if (record.isBlocked) {
      const error = CommonErrors.rateLimited(Math.max(1, record.timeToExpire));
      if (!this.reflector.get<boolean | undefined>(ANSWERS_RATE_LIMIT, context.getHandler())) throw error;
      request.rateLimitError = error;
    }
    return true;
  }

  private access(context: ExecutionContext): RouteAccess | undefined {
    return this.reflector.get<RouteAccess | undefined>(ROUTE_ACCESS, context.getHandler());
  }
}
