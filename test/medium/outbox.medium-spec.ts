import { newId } from 'src/common/ids/ids.js';
import { OutboxRepository } from 'src/modules/events/outbox.repository.js';
import { until } from '../utils/until.js';
import { insertAccount, type MediumDatabase, openDatabase } from './fixtures.js';

/** The outbox as webhook delivery reads it (`OutboxRepository`), against the real schema. */
describe('Events outbox, dispatch side', () => {
  let db: MediumDatabase;
  let outbox: OutboxRepository;
  let accountId: string;

  beforeAll(async () => {
    db = await openDatabase();
    outbox = new OutboxRepository(db.dataSource);
    accountId = await insertAccount(db.sql);
  });
  afterAll(async () => {
    await db?.close();
  });

  const insertEvent = async (resourceId: string): Promise<string> => {
    const id = newId('evt');
    await db.sql.query(
      `INSERT INTO events (id, account_id, event, resource_id, data) VALUES ($1, $2, 'dataset.updated', $3, '{}')`,
      [id, accountId, resourceId],
    );
    return id;
  };

  it('gives dispatchers turns: the second waits for the first, then finds its events dispatched', async () => {
    const ids = [await insertEvent('ds_1'), await insertEvent('ds_1'), await insertEvent('ds_2')];
    let second: Promise<string[]> | undefined;
    await db.dataSource.transaction('READ COMMITTED', async (tx) => {
      const events = await outbox.undispatched(tx, 10);
      expect(events.map((e) => e.id)).toEqual(ids); // in the order they were recorded
      second = db.dataSource.transaction('READ COMMITTED', async (other) =>
        (await outbox.undispatched(other, 10)).map((e) => e.id),
      );
      await until(async () => {
        const { rows } = await db.sql.query<{ waiting: number }>(
          `SELECT count(*)::int AS waiting FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
        );
        return rows[0].waiting === 1;
      }, 5_000);
      await outbox.markDispatched(
        tx,
        events.map((e) => e.seq),
      );
    });
    expect(await second).toEqual([]);
  });

  it('purges the events dispatched past retention, never an undispatched one', async () => {
    const old = await insertEvent('ds_3');
    const recent = await insertEvent('ds_3');
    const undispatched = await insertEvent('ds_3');
    await db.sql.query(`UPDATE events SET dispatched_at = now() - interval '31 days' WHERE id = $1`, [old]);
    await db.sql.query(`UPDATE events SET dispatched_at = now() WHERE id = $1`, [recent]);
    await outbox.purgeDispatched(30);
    const { rows } = await db.sql.query<{ id: string }>(
      'SELECT id FROM events WHERE id = ANY($1) ORDER BY seq',
      [[old, recent, undispatched]],
    );
    expect(rows.map((r) => r.id)).toEqual([recent, undispatched]);
  });
});
