import type { Request } from 'express';
import type { RateLimits } from 'src/config/app-config.js';
import { ANONYMOUS, AuthTier, type Principal } from 'src/modules/auth/auth.types.js';

/** The hourly budget of a tier. */
export function tierLimit(limits: RateLimits, tier: AuthTier): number {
  switch (tier) {
    case AuthTier.ApiKey:
      return limits.apiKey;
    case AuthTier.OAuth:
      return limits.oauth;
    case AuthTier.Session:
      return limits.session;
    case AuthTier.Anonymous:
      return limits.anonymous;
  }
}

/** Counts every request against its credential's hourly budget (anonymous callers per address). */
export function rateLimitTracker(request: Request): string {
  const principal: Principal = request.principal ?? ANONYMOUS;
  return principal.credentialId
    ? `${principal.tier}:${principal.credentialId}`
    : `ip:${request.ip ?? 'unknown'}`;
}
