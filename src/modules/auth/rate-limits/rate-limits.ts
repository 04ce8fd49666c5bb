import { isIPv6 } from 'node:net';
import type { Request } from 'express';
import type { RateLimits } from 'src/modules/auth/rate-limits/rate-limits.config.js';
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

/**
 * Counts every request against its credential's hourly budget; anonymous callers per network
 * (`clientNetwork`).
 */
export function rateLimitTracker(request: Request): string {
  const principal: Principal = request.principal ?? ANONYMOUS;
  return principal.credentialId
    ? `${principal.tier}:${principal.credentialId}`
    : `ip:${networkOf(request.ip)}`;
}

/** The client network of an address (`clientNetwork`), as the budgets counted per network name it. */
export function networkOf(address: string | undefined): string {
  return address === undefined ? 'unknown' : clientNetwork(address);
}

/**
 * The network an anonymous budget is counted for: an IPv4 address as itself (also when it comes
 * IPv4-mapped, `::ffff:1.2.3.4`, as a dual-stack socket reports it), an IPv6 address by its /64, the
 * block a single subscriber is given: counted per address, one such client would hold 2^64 budgets,
 * and as many guesses at API keys.
 */
export function clientNetwork(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  if (!isIPv6(address)) return address;
  const groups = ipv6Groups(address);
  return groups ? `${groups.slice(0, 4).join(':')}::/64` : address;
}

/** The eight 16-bit groups of an IPv6 address, in lower-case hex without leading zeros. */
function ipv6Groups(address: string): string[] | null {
  const halves = address.split('%')[0].split('::');
  const groups = (part: string) =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => (group.includes('.') ? ipv4Groups(group) : [group]));
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  const zeros = halves.length === 2 ? 8 - head.length - tail.length : 0;
  const all = [...head, ...Array<string>(Math.max(zeros, 0)).fill('0'), ...tail];
  return all.length === 8 ? all.map((group) => parseInt(group, 16).toString(16)) : null;
}

/** An embedded IPv4 address (`::1.2.3.4`) as the two groups it stands for. */
function ipv4Groups(dotted: string): string[] {
  const [a, b, c, d] = dotted.split('.').map(Number);
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
}
