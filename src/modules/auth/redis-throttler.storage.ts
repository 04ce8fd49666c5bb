import type { ThrottlerStorage } from '@nestjs/throttler';
import type { Redis } from 'src/common/redis/redis.module.js';

/**
 * A fixed window per key, kept in Redis so that every API process shares one count. The counter and its
 * expiry are set in one script, so a crash between the two cannot leave a counter that never expires.
 */
const INCREMENT_SCRIPT = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return { hits, ttl }
`;

type ThrottlerStorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

export class RedisThrottlerStorage implements ThrottlerStorage {
  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
  ) {}

  async increment(key: string, ttlMs: number, limit: number): Promise<ThrottlerStorageRecord> {
    const [hits, remainingMs] = (await this.redis.eval(INCREMENT_SCRIPT, {
      keys: [`${this.keyPrefix}:${key}`],
      arguments: [String(ttlMs)],
    })) as [number, number];
    const timeToExpire = Math.ceil(remainingMs / 1000);
    return { totalHits: hits, timeToExpire, isBlocked: hits > limit, timeToBlockExpire: timeToExpire };
  }
}
