import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { REDIS, type Redis } from 'src/common/redis/redis.module.js';
import { REDIS_CONFIG, type RedisConfig } from 'src/common/redis/redis.config.js';
import { SIGN_IN_CONFIG, type SignInConfig } from 'src/modules/auth/sessions/sign-in.config.js';
import { networkOf } from 'src/modules/auth/rate-limits/rate-limits.js';
import { RedisThrottlerStorage } from 'src/modules/auth/rate-limits/redis-throttler.storage.js';

/** Gives an attempt back, unless its window has ended meanwhile (DECR would start a counter with no expiry). */
const GIVE_BACK_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end
return 0
`;

/**
 * Limits password guessing, in fixed windows shared by every API process (Redis), by three counts of
 * attempts: the client network's (at every email), the email's (from every network), and the
 * network's at that email. A network past its budget is refused; an email past its budget is refused
 * only to the networks that have failed at it in the window, so that an attacker's guesses cannot
 * lock the person out from a network of their own, while each further network of a distributed guess
 * gets one try at most. An attempt counts when it starts, so that parallel guesses cannot all slip
 * under the limit, and is given back when it succeeds: only failures use up the budgets.
 */
@Injectable()
export class SignInThrottle {
  private readonly storage: RedisThrottlerStorage;
  private readonly prefix: string;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(REDIS_CONFIG) redisConfig: RedisConfig,
    @Inject(SIGN_IN_CONFIG) private readonly config: SignInConfig,
  ) {
    this.storage = new RedisThrottlerStorage(redis, redisConfig.prefix);
    this.prefix = redisConfig.prefix;
  }

  /**
   * Counts an attempt from `address` at `email`, or throws 429 when a budget that applies is spent.
   * The returned function gives the attempt back once it has succeeded.
   */
  async begin(address: string | undefined, email: string): Promise<() => Promise<void>> {
    const network = networkOf(address);
    const emailHash = createHash('sha256').update(email).digest('base64url');
    const keys = [
      `sign-in:ip:${network}`,
      `sign-in:email:${emailHash}`,
      `sign-in:email-ip:${emailHash}:${network}`,
    ];
    const { maxAttempts, windowSeconds } = this.config;
    const [byNetwork, byEmail, byNetworkAtEmail] = await Promise.all(
      keys.map((key) => this.storage.increment(key, windowSeconds * 1000, maxAttempts)),
    );
    const giveBack = async () => {
      await Promise.all(
        keys.map((key) => this.redis.eval(GIVE_BACK_SCRIPT, { keys: [`${this.prefix}:${key}`] })),
      );
    };
    // This attempt is counted in each: the network failed at the email before when its count is above 1.
    const blocked = [
      byNetwork.isBlocked ? byNetwork : null,
      byEmail.isBlocked && byNetworkAtEmail.totalHits > 1 ? byEmail : null,
    ].filter((record) => record !== null);
    if (blocked.length > 0) {
      // Refused before it ran, the attempt uses up no budget (a spent one stays at its limit).
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
