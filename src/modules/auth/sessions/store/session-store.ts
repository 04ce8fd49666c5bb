import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { isId } from 'src/common/ids/ids.js';
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
  /** The SHA-256 of the session's secret, which is how Redis names it; the secret itself is only in the cookie. */
  key: string;
  /** When the session ends if it is not used meanwhile (Unix milliseconds). */
  idleExpiresAt: number;
}

/**
 * Removes every session of a user in one step: the caller names the sessions the index listed, and
 * nothing is removed (-1) when the index lists another meanwhile, so that none can slip through. The
 * keys it deletes are all in KEYS, as a Redis Cluster requires; they share the user's hash tag.
 */
const DESTROY_ALL_SCRIPT = `
local members = redis.call('SMEMBERS', KEYS[1])
if #members ~= #KEYS - 1 then return -1 end
local named = {}
for i = 2, #KEYS do named[KEYS[i]] = true end
for _, member in ipairs(members) do
  if not named[ARGV[1] .. member] then return -1 end
end
for i = 1, #KEYS do redis.call('DEL', KEYS[i]) end
return #members
`;

/** A session created between reading the index and the script makes it try again; this often at most. */
const DESTROY_ALL_ATTEMPTS = 10;

/** What the cookie carries: whose session it is (the hash tag of its keys) and its 256 random bits. */
export interface SessionCookie {
  userId: string;
  secret: string;
}

/** The cookie's value: `<user id>.<secret>`. */
export function formatSessionCookie(cookie: SessionCookie): string {
  return `${cookie.userId}.${cookie.secret}`;
}

/** The user and secret of a cookie's value, or null when it is not one this store made. */
export function parseSessionCookie(value: string): SessionCookie | null {
  const dot = value.indexOf('.');
  if (dot < 0) return null;
  const userId = value.slice(0, dot);
  const secret = value.slice(dot + 1);
  if (!isId('usr', userId) || !/^[A-Za-z0-9_-]{43}$/.test(secret)) return null;
  return { userId, secret };
}

/**
 * Server-side sessions in Redis, shared by every API process. The cookie holds the user's id and a
 * random secret of 256 bits; Redis holds the session under the secret's SHA-256 (a dump of Redis
 * yields no usable cookie), with a time to live that each use moves on to the idle timeout. Each
 * user's sessions are also listed in a set, so that disabling a user or changing their password ends
 * all of them at once. A user's keys share the hash tag `{<user id>}`, so that on a Redis Cluster the
 * session and the set are written in one MULTI and removed in one script (docs/deployment.md).
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

  /** Starts a session: always under a new secret, so that a cookie planted before sign-in is worth nothing. */
  async create(user: { id: string; accountId: string }): Promise<{ id: string; session: ActiveSession }> {
    const secret = randomBytes(32).toString('base64url');
    const key = hashSecret(secret);
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
      .set(this.sessionKey(user.id, key), JSON.stringify(stored), { PX: ttl })
      .sAdd(this.userIndex(user.id), key)
      .pExpire(this.userIndex(user.id), this.lifetimeMs)
      .exec();
    const id = formatSessionCookie({ userId: user.id, secret });
    return { id, session: { ...stored, key, idleExpiresAt: now + ttl } };
  }

  /** The session the cookie names, its idle time to live moved on; null when it has ended. */
  async touch(id: string): Promise<ActiveSession | null> {
    const cookie = parseSessionCookie(id);
    if (!cookie) return null;
    const key = hashSecret(cookie.secret);
    const now = Date.now();
    const raw = await this.redis.getEx(this.sessionKey(cookie.userId, key), {
      type: 'PX',
      value: this.idleMs,
    });
    if (raw === null) return null;
    const stored = JSON.parse(raw) as StoredSession;
    if (stored.expiresAt <= now || stored.userId !== cookie.userId) {
      await this.destroy(id);
      return null;
    }
    return { ...stored, key, idleExpiresAt: Math.min(now + this.idleMs, stored.expiresAt) };
  }

  /** Ends the session the cookie names, if it has not ended already. */
  async destroy(id: string): Promise<void> {
    const cookie = parseSessionCookie(id);
    if (!cookie) return;
    const key = hashSecret(cookie.secret);
    await this.redis
      .multi()
      .del(this.sessionKey(cookie.userId, key))
      .sRem(this.userIndex(cookie.userId), key)
      .exec();
  }

  /** Ends every session of the user; returns how many there were. */
  async destroyAllFor(userId: string): Promise<number> {
    const index = this.userIndex(userId);
    for (let attempt = 0; attempt < DESTROY_ALL_ATTEMPTS; attempt++) {
      const keys = await this.redis.sMembers(index);
      const removed = (await this.redis.eval(DESTROY_ALL_SCRIPT, {
        keys: [index, ...keys.map((key) => this.sessionKey(userId, key))],
        arguments: [this.sessionKey(userId, '')],
      })) as number;
      if (removed >= 0) return removed;
    }
    throw new Error(`the sessions of ${userId} kept changing while they were being ended`);
  }

  private sessionKey(userId: string, key: string): string {
    return `${this.prefix}{${userId}}:${key}`;
  }

  private userIndex(userId: string): string {
    return `${this.prefix}{${userId}}:all`;
  }
}

function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}
