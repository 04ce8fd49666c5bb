import type { ThrottlerStorage } from '@nestjs/throttler';
import type { Redis } from 'src/common/redis/redis.module.js';

/**
 * A fixed window per key, kept in Redis so that every API process shares one count. The counter and its
 * expiry are set in one script, so a crash between the two cannot leave a counter that never expires.
 * The window ends on a whole second of Redis's clock, which the script reports, so that every
 * response of a window names the same `X-RateLimit-Reset` (one worked out from a process's own clock
 * and a rounded remaining time wavers by a second).
 */
const INCREMENT_SCRIPT = `
local hits = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if ttl < 0 then
  local reset = math.ceil((now + tonumber(ARGV[1])) / 1000)
  redis.call('PEXPIREAT', KEYS[1], reset * 1000)
  return { hits, reset * 1000 - now, reset }
end
return { hits, ttl, math.floor((now + ttl) / 1000 + 0.5) }
`;

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/** A count in its window, and when the window ends (Unix seconds). */
export interface WindowRecord extends ThrottlerStorageRecord {
  resetAt: number;
}

export class RedisThrottlerStorage implements ThrottlerStorage {
  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
  ) {}

  async increment(key: string, ttlMs: number, limit: number): Promise<WindowRecord> {
    const [hits, remainingMs, resetAt] = (await this.redis.eval(INCREMENT_SCRIPT, {
      keys: [`${this.keyPrefix}:${key}`],
      arguments: [String(ttlMs)],
    })) as [number, number, number];
    const timeToExpire = Math.ceil(remainingMs / 1000);
    return {
      totalHits: hits,
      timeToExpire,
      isBlocked: hits > limit,
      timeToBlockExpire: timeToExpire,
      resetAt,
    };
  }
}
