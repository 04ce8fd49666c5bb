import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import pg from 'pg';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { DATABASE_CONFIG, type DatabaseConfig } from 'src/database/database.config.js';
import { API_KEYS_CONFIG, type ApiKeysConfig } from 'src/modules/auth/api-keys/api-keys.config.js';

/** The channel on which a trigger on `api_keys` (migration 5) names each key that changes. */
const CHANNEL = 'api_key_changed';
/** Keys held at most; the longest held goes first. */
const MAX_KEYS = 10_000;
/** Waits before reconnecting a lost listener: doubled after each failure, up to the second figure. */
const RECONNECT_MS = [500, 30_000] as const;

/** What verifying a key needs from its row. */
export interface KnownKey {
  secretHash: Buffer;
  accountId: string;
  lastUsedAt: Date | null;
}

/** Taken before a key is read from the database, handed back to `remember` (see there). */
export type CacheEpoch = number;

/**
 * API keys verified recently, kept in memory for `API_KEY_CACHE_SECONDS`, so that an authenticated
 * request need not wait for a database round trip before its work starts. A revocation still takes
 * effect at once: PostgreSQL announces every key that changes when the change commits (migration 5),
 * and this process, which listens on a connection of its own, forgets it.
 *
 * The cache is trusted only while that connection listens: until it has connected, and from the
 * moment it is lost until it has connected again, every key is read from the database, and what was
 * kept is dropped, since announcements may have been missed meanwhile. The time limit bounds what a
 * missed announcement could cost in any case. The listener starts with the first key looked up, so
 * that a process that never verifies keys (the command line) never opens it.
 */
@Injectable()
export class ApiKeyCache implements OnApplicationShutdown {
  private readonly keys = new Map<string, KnownKey & { expiresAt: number }>();
  private readonly ttlMs: number;
  private listener: pg.Client | null = null;
  private started = false;
  private listening = false;
  private closed = false;
  private reconnect: NodeJS.Timeout | null = null;
  private backoffMs: number = RECONNECT_MS[0];
  /** Moves on with every announcement and every change of `listening` (see `remember`). */
  private epoch = 0;

  constructor(
    @Inject(API_KEYS_CONFIG) config: ApiKeysConfig,
    @Inject(DATABASE_CONFIG) private readonly database: Pick<DatabaseConfig, 'url'>,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.ttlMs = config.cacheSeconds * 1000;
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    if (this.reconnect) clearTimeout(this.reconnect);
    this.stopTrusting();
    await this.listener?.end().catch(() => undefined);
  }

  /** Whether keys are being kept (the listener is connected). */
  get active(): boolean {
    return this.listening;
  }

  /** The key as verified earlier, or undefined when it is not held (or not to be trusted now). */
  get(id: string): KnownKey | undefined {
    if (!this.started && this.ttlMs > 0 && !this.closed) {
      this.started = true;
      void this.listen();
    }
    if (!this.listening) return undefined;
    const key = this.keys.get(id);
    if (key && key.expiresAt <= Date.now()) {
      this.keys.delete(id);
      return undefined;
    }
    return key;
  }

  /** The epoch to pass to `remember` for a key about to be read from the database. */
  begin(): CacheEpoch {
    return this.epoch;
  }

  /**
   * Keeps a key read and verified since `begin()` returned `epoch`, unless anything was announced
   * since: the announcement may concern this very key, read before its change committed.
   */
  remember(id: string, key: KnownKey, epoch: CacheEpoch): void {
    if (!this.listening || epoch !== this.epoch) return;
    if (this.keys.size >= MAX_KEYS && !this.keys.has(id)) {
      this.keys.delete(this.keys.keys().next().value!);
    }
    this.keys.set(id, { ...key, expiresAt: Date.now() + this.ttlMs });
  }

  /** Records that the key's use was written, so that the next request does not write it again. */
  touch(id: string, at: Date): void {
    const key = this.keys.get(id);
    if (key) key.lastUsedAt = at;
  }

  /** Drops a key at once (a change this process made itself); every process also hears of it. */
  forget(id: string): void {
    this.epoch++;
    this.keys.delete(id);
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.database.url,
      application_name: 'dataset-search/api-key-cache',
    });
    this.listener = client;
    client.on('notification', ({ payload }) => this.forget(payload ?? ''));
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      this.lost(client, err);
      return;
    }
    if (this.listener !== client || this.closed) return;
    // Nothing is held (nothing is kept while not listening), but a key whose read began before
    // LISTEN took effect may have missed its announcement: the epoch moves so that it is not kept.
    this.epoch++;
    this.listening = true;
    this.backoffMs = RECONNECT_MS[0];
  }

  /** The listener failed: stop trusting what is kept and connect again later. */
  private lost(client: pg.Client, err: unknown): void {
    if (this.listener !== client) return;
    this.listener = null;
    this.stopTrusting();
    client.end().catch(() => undefined);
    if (this.closed) return;
    this.logger.warn(
      { err, retry_in_ms: this.backoffMs },
      'API key cache off: its listener is not connected',
    );
    this.reconnect = setTimeout(() => {
      this.reconnect = null;
      void this.listen();
    }, this.backoffMs);
    this.reconnect.unref();
    this.backoffMs = Math.min(2 * this.backoffMs, RECONNECT_MS[1]);
  }

  private stopTrusting(): void {
    this.listening = false;
    this.epoch++;
    this.keys.clear();
  }
}
