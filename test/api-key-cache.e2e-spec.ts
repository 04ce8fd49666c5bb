import { pino } from 'pino';
import { ApiKeyCache } from 'src/modules/auth/api-keys/api-key-cache.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { until } from './utils/until.js';

const LISTENER = 'dataset-search/api-key-cache';

/**
 * API processes keep the keys they have verified in memory; PostgreSQL announces every change of a
 * key, and a process that cannot hear the announcements trusts nothing it kept.
 */
describe('API keys kept in memory', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const list = (key: CreatedKey) => t.http.get('/v1/datasets').set(bearer(key)).timeout(3_000);

  /** The listener's backend once it has run LISTEN (the first key looked up starts it). */
  async function listenerPid(): Promise<number> {
    for (let i = 0; i < 250; i++) {
      const { rows } = await t.sql.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = $1 AND query LIKE 'LISTEN%'`,
        [LISTENER],
      );
      if (rows.length === 1) return rows[0].pid;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error('the API key listener never connected');
  }

  /** A key verified while the listener listens: the process now holds it. */
  async function heldKey(): Promise<CreatedKey> {
    const key = await t.createApiKey();
    await list(key).expect(200);
    await listenerPid();
    await list(key).expect(200);
    return key;
  }

  it('answers a key it has verified without reading it again', async () => {
    const key = await heldKey();
    // With the table locked, a request that read the key would wait for the lock and time out.
    const locker = await t.sql.connect();
    try {
      await locker.query('BEGIN; LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
      await list(key).expect(200);
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
    }
  });

  it('refuses a key as soon as any writer revokes it', async () => {
    const key = await heldKey();
    await t.sql.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.key_id]);
    // Refused once the announcement arrives (docs/decisions.md: a request in between still passes),
    // far within the 60 s the key would otherwise be kept.
    await until(async () => (await list(key)).status === 401, 2_000);
    expect((await list(key).expect(401)).body.code).toBe('invalid_api_key');
  });

  it('reads every key from the database while it cannot hear the announcements', async () => {
    const key = await heldKey();
    await t.sql.query('SELECT pg_terminate_backend($1)', [await listenerPid()]);
    await t.waitForOutput('API key cache off');
    // Nobody hears this revocation: only reading the key finds it.
    await t.sql.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.key_id]);
    expect((await list(key).expect(401)).body.code).toBe('invalid_api_key');
    // And it listens again, on a new connection.
    await listenerPid();
  });

  it('does not keep a key read before an announcement that may concern it', async () => {
    const cache = new ApiKeyCache({ cacheSeconds: 60 }, { url: t.database.url }, pino({ level: 'silent' }));
    try {
      const key = { secretHash: Buffer.alloc(32), accountId: 'acc_1', lastUsedAt: null };
      expect(cache.get('key_a')).toBeUndefined(); // starts the listener
      await until(() => cache.active, 5_000);
      expect(cache.active).toBe(true);

      const before = cache.begin();
      cache.forget('key_other'); // what an announcement does
      cache.remember('key_a', key, before);
      expect(cache.get('key_a')).toBeUndefined();

      cache.remember('key_a', key, cache.begin());
      expect(cache.get('key_a')).toMatchObject({ accountId: 'acc_1' });
    } finally {
      await cache.onApplicationShutdown();
    }
  });
});
