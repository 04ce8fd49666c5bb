import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { REDIS, type Redis } from 'src/common/redis/redis.module.js';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';
import { clientNetwork } from 'src/modules/auth/rate-limits.js';
import { RedisThrottlerStorage } from 'src/modules/auth/redis-throttler.storage.js';

/** Gives an attempt back, unless its window has ended meanwhile (DECR would start a counter with no expiry). */
const GIVE_BACK_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end
return 0
`;

/**
 * Limits password guessing: attempts are counted per client network and per email, each in a fixed
 * window shared by every API process (Redis). An attempt counts when it starts, so that parallel
 * guesses cannot all slip under the limit, and is given back when it succeeds: only failures use up
 * the budget. Past the limit, even the right password is refused until the window ends.
 */
@Injectable()
export class SignInThrottle {
  private readonly storage: RedisThrottlerStorage;
  private readonly prefix: string;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.storage = new RedisThrottlerStorage(redis, config.redisPrefix);
    this.prefix = config.redisPrefix;
  }

  /**
   * Counts an attempt from `address` at `email`, or throws 429 when either budget is spent. The
   * returned function gives the attempt back once it has succeeded.
   */
  async begin(address: string | undefined, email: string): Promise<() => Promise<void>> {
    const keys = [
      `sign-in:ip:${address === undefined ? 'unknown' : clientNetwork(address)}`,
      `sign-in:email:${createHash('sha256').update(email).digest('base64url')}`,
    ];
    const { maxAttempts, windowSeconds } = this.config.signIn;
    const records = await Promise.all(
      keys.map((key) => this.storage.increment(key, windowSeconds * 1000, maxAttempts)),
    );
    const giveBack = async () => {
      await Promise.all(
        keys.map((key) => this.redis.eval(GIVE_BACK_SCRIPT, { keys: [`${this.prefix}:${key}`] })),
      );
    };
    const blocked = records.filter((record) => record.isBlocked);
    if (blocked.length > 0) {
      // Refused before it ran, the attempt uses up neither budget (the spent one stays at its limit).
      await giveBack();
      const retryAfter = Math.max(...blocked.map((record) => record.timeToExpire));
      throw CommonErrors.rateLimited(
        retryAfter,
        `Too many sign-in attempts; retry in ${retryAfter} seconds`,
        {
          limit: maxAttempts,
          window_seconds: windowSeconds,
        },
      );
    }
    return giveBack;
  }
}
