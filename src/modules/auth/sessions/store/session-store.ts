import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { REDIS, type Redis } from 'src/common/redis/redis.module.js';
import { REDIS_CONFIG, type RedisConfig } from 'src/common/redis/redis.config.js';
import { SESSIONS_CONFIG, type SessionsConfig } from 'src/modules/auth/sessions/sessions.config.js';

/** What a session remembers: whose it is, and when it ends at the latest. */
export interface StoredSession {
  userId: string;
  accountId: string;
  /** Unix milliseconds. */
  createdAt: number;
  /** The absolute end (Unix milliseconds), however active the session is. */
  expiresAt: number;
}

export interface ActiveSession extends StoredSession {
  /** The SHA-256 of the session id, which is how Redis names it; the id itself is only in the cookie. */
  key: string;
  /** When the session ends if it is not used meanwhile (Unix milliseconds). */
  idleExpiresAt: number;
}

/**
 * Removes every session of a user in one step, so that a session created meanwhile cannot slip
 * between reading the index and deleting what it names.
 */
const DESTROY_ALL_SCRIPT = `
local keys = redis.call('SMEMBERS', KEYS[1])
for _, key in ipairs(keys) do redis.call('DEL', ARGV[1] .. key) end
redis.call('DEL', KEYS[1])
return #keys
`;

/**
 * Server-side sessions in Redis, shared by every API process. The cookie holds a random id of 256
 * bits; Redis holds the session under the id's SHA-256 (a dump of Redis yields no usable cookie), with
 * a time to live that each use moves on to the idle timeout. Each user's sessions are also listed in
 * a set, so that disabling a user or changing their password ends all of them at once.
 */
@Injectable()
export class SessionStore {
  private readonly idleMs: number;
  private readonly lifetimeMs: number;
  private readonly prefix: string;

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(SESSIONS_CONFIG) config: SessionsConfig,
    @Inject(REDIS_CONFIG) redisConfig: RedisConfig,
  ) {
    this.idleMs = config.idleSeconds * 1000;
    this.lifetimeMs = config.lifetimeSeconds * 1000;
    this.prefix = `${redisConfig.prefix}:session:`;
  }

  /** Starts a session: always under a new id, so that an id planted before sign-in is worth nothing. */
  async create(user: { id: string; accountId: string }): Promise<{ id: string; session: ActiveSession }> {
    const id = randomBytes(32).toString('base64url');
    const key = hashId(id);
    const now = Date.now();
    const stored: StoredSession = {
      userId: user.id,
      accountId: user.accountId,
      createdAt: now,
      expiresAt: now + this.lifetimeMs,
    };
    const ttl = Math.min(this.idleMs, this.lifetimeMs);
    await this.redis
      .multi()
      .set(this.prefix + key, JSON.stringify(stored), { PX: ttl })
      .sAdd(this.userIndex(user.id), key)
      .pExpire(this.userIndex(user.id), this.lifetimeMs)
      .exec();
    return { id, session: { ...stored, key, idleExpiresAt: now + ttl } };
  }

  /** The session the cookie names, its idle time to live moved on; null when it has ended. */
  async touch(id: string): Promise<ActiveSession | null> {
    const key = hashId(id);
    const now = Date.now();
    const raw = await this.redis.getEx(this.prefix + key, { type: 'PX', value: this.idleMs });
    if (raw === null) return null;
    const stored = JSON.parse(raw) as StoredSession;
    if (stored.expiresAt <= now) {
      await this.destroy(id);
      return null;
    }
    return { ...stored, key, idleExpiresAt: Math.min(now + this.idleMs, stored.expiresAt) };
  }

  /** Ends the session the cookie names, if it has not ended already. */
  async destroy(id: string): Promise<void> {
    const key = hashId(id);
    const raw = await this.redis.getDel(this.prefix + key);
    if (raw !== null) await this.redis.sRem(this.userIndex((JSON.parse(raw) as StoredSession).userId), key);
  }

  /** Ends every session of the user; returns how many there were. */
  async destroyAllFor(userId: string): Promise<number> {
    return (await this.redis.eval(DESTROY_ALL_SCRIPT, {
      keys: [this.userIndex(userId)],
      arguments: [this.prefix],
    })) as number;
  }

  private userIndex(userId: string): string {
    return `${this.prefix}user:${userId}`;
  }
}

function hashId(id: string): string {
  return createHash('sha256').update(id).digest('base64url');
}
