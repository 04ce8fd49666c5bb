import { newId } from 'src/common/ids/ids.js';
import {
  type AttemptRecord,
  DeliveriesRepository,
} from 'src/modules/webhooks/delivery/deliveries.repository.js';
import { until } from '../utils/until.js';
import {
  insertAccount,
  insertDelivery,
  insertWebhook,
  type MediumDatabase,
  openDatabase,
} from './fixtures.js';

const LEASE_MS = 60_000;

/**
 * The statements that decide every attempt (`DeliveriesRepository`), against the real schema: the
 * claim and its lease, the order per webhook and resource, settling, and the hourly limit.
 */
describe('Webhook deliveries', () => {
  let db: MediumDatabase;
  let deliveries: DeliveriesRepository;
  let accountId: string;

  beforeAll(async () => {
    db = await openDatabase();
    deliveries = new DeliveriesRepository(db.dataSource);
    accountId = await insertAccount(db.sql);
  });
  afterAll(async () => {
    await db?.close();
  });

  const row = async (deliveryId: string) =>
    (
      await db.sql.query<{ status: string; attempts: number; next_in_ms: number; completed: boolean }>(
        `SELECT status, attempts, completed_at IS NOT NULL AS completed,
                (extract(epoch FROM next_attempt_at - now()) * 1000)::float8 AS next_in_ms
           FROM webhook_deliveries WHERE id = $1`,
        [deliveryId],
      )
    ).rows[0];
  /** Statements of this database waiting for a lock another transaction holds. */
  const waitingOnLocks = async () =>
    (
      await db.sql.query<{ waiting: number }>(
        `SELECT count(*)::int AS waiting FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      )
    ).rows[0].waiting;
  const dueIds = async (webhookIds: string[]) =>
    (await deliveries.due(100, webhookIds)).map((due) => due.deliveryId);
  const settle = (attempt: AttemptRecord, next: Parameters<DeliveriesRepository['settle']>[2]) =>
    db.dataSource.transaction((tx) => deliveries.settle(tx, attempt, next));
  const attemptOf = (
    deliveryId: string,
    attempt: number,
    outcome: 'delivered' | 'failed',
  ): AttemptRecord => ({
    id: newId('att'),
    deliveryId,
    attempt,
    outcome,
    statusCode: outcome === 'delivered' ? 200 : 503,
    durationMs: 12,
    error: outcome === 'delivered' ? null : 'the receiver answered 503',
    responseBody: '',
    startedAt: new Date(),
  });

  describe('claim', () => {
    it('claims a due delivery once: of two claims of the same attempt racing for its row, one wins', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const deliveryId = await insertDelivery(db.sql, webhookId, 'ds_race');
      // Both claims wait on the row until this transaction ends, then each re-reads it.
      const holder = await db.sql.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT 1 FROM webhook_deliveries WHERE id = $1 FOR UPDATE', [deliveryId]);
        const racing = [deliveries.claim(deliveryId, 0, LEASE_MS), deliveries.claim(deliveryId, 0, LEASE_MS)];
        await until(async () => (await waitingOnLocks()) === 2, 5_000);
        await holder.query('COMMIT');
        const claims = await Promise.all(racing);
        expect(claims.filter((claim) => claim !== null)).toHaveLength(1);
      } finally {
        holder.release();
      }
      expect(await row(deliveryId)).toMatchObject({ status: 'pending', attempts: 1 });
    });

    it('answers what sending needs, with the previous secret only while it still signs', async () => {
      const rotated = await insertWebhook(db.sql, accountId, { previousSecretExpiresInSeconds: 3_600 });
      const expired = await insertWebhook(db.sql, accountId, { previousSecretExpiresInSeconds: -1 });
      const first = await insertDelivery(db.sql, rotated, 'ds_secrets');
      const second = await insertDelivery(db.sql, expired, 'ds_secrets');
      expect(await deliveries.claim(first, 0, LEASE_MS)).toEqual({
        id: first,
        webhookId: rotated,
        eventId: expect.stringMatching(/^evt_/),
        event: 'dataset.updated',
        resourceId: 'ds_secrets',
        body: '{}',
        attempt: 1,
        url: 'https://receiver.example/hooks',
        secrets: ['whsec_new', 'whsec_old'],
      });
      expect((await deliveries.claim(second, 0, LEASE_MS))?.secrets).toEqual(['whsec_new']);
    });

    it('refuses a job whose attempts number has moved on (queued twice, or by the sweep)', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const deliveryId = await insertDelivery(db.sql, webhookId, 'ds_moved', { attempts: 1 });
      expect(await deliveries.claim(deliveryId, 0, LEASE_MS)).toBeNull();
      expect(await row(deliveryId)).toMatchObject({ attempts: 1 });
      expect((await deliveries.claim(deliveryId, 1, LEASE_MS))?.attempt).toBe(2);
    });

    it('holds the claimed delivery for the lease, so that a second claim of its next attempt is refused', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const deliveryId = await insertDelivery(db.sql, webhookId, 'ds_lease');
      expect(await deliveries.claim(deliveryId, 0, LEASE_MS)).not.toBeNull();
      const { next_in_ms } = await row(deliveryId);
      expect(next_in_ms).toBeGreaterThan(LEASE_MS - 5_000);
      expect(next_in_ms).toBeLessThanOrEqual(LEASE_MS);
      expect(await deliveries.claim(deliveryId, 1, LEASE_MS)).toBeNull();
      expect(await dueIds([webhookId])).toEqual([]);
    });

    it('claims the next attempt again once the lease has run out (a worker died mid-attempt)', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const deliveryId = await insertDelivery(db.sql, webhookId, 'ds_expiry');
      expect(await deliveries.claim(deliveryId, 0, 200)).not.toBeNull();
      expect(await deliveries.claim(deliveryId, 1, 200)).toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(await dueIds([webhookId])).toEqual([deliveryId]);
      // The job of the lost attempt names attempts 0: its number has moved on, so only attempt 2 runs.
      expect(await deliveries.claim(deliveryId, 0, LEASE_MS)).toBeNull();
      expect((await deliveries.claim(deliveryId, 1, LEASE_MS))?.attempt).toBe(2);
    });

    it('refuses a delivery that ended, one not yet due, and one of an inactive webhook', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const inactive = await insertWebhook(db.sql, accountId, { active: false });
      const delivered = await insertDelivery(db.sql, webhookId, 'ds_a', { status: 'delivered' });
      const failed = await insertDelivery(db.sql, webhookId, 'ds_b', { status: 'failed' });
      const later = await insertDelivery(db.sql, webhookId, 'ds_c');
      await db.sql.query(
        `UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 minute' WHERE id = $1`,
        [later],
      );
      const off = await insertDelivery(db.sql, inactive, 'ds_d');
      for (const id of [delivered, failed, later, off])
        expect(await deliveries.claim(id, 0, LEASE_MS)).toBeNull();
      expect(await dueIds([webhookId, inactive])).toEqual([]);
    });
  });

  describe('order per webhook and resource', () => {
    it("keeps a resource's later delivery out of line while an earlier one is pending, not another resource's or webhook's", async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const otherWebhook = await insertWebhook(db.sql, accountId);
      const earlier = await insertDelivery(db.sql, webhookId, 'doc_1');
      const later = await insertDelivery(db.sql, webhookId, 'doc_1');
      const otherResource = await insertDelivery(db.sql, webhookId, 'doc_2');
      const sameResourceElsewhere = await insertDelivery(db.sql, otherWebhook, 'doc_1');

      expect((await dueIds([webhookId, otherWebhook])).sort()).toEqual(
        [earlier, otherResource, sameResourceElsewhere].sort(),
      );
      expect(await deliveries.claim(later, 0, LEASE_MS)).toBeNull();
      expect(await deliveries.claim(otherResource, 0, LEASE_MS)).not.toBeNull();
      expect(await deliveries.claim(sameResourceElsewhere, 0, LEASE_MS)).not.toBeNull();

      // Retried, the earlier one is still pending: the later one waits through its retries too.
      expect(await deliveries.claim(earlier, 0, LEASE_MS)).not.toBeNull();
      await settle(attemptOf(earlier, 1, 'failed'), { retryAt: new Date(Date.now() - 1_000) });
      expect(await dueIds([webhookId])).toEqual([earlier]);
      expect(await deliveries.claim(later, 0, LEASE_MS)).toBeNull();

      expect(await deliveries.claim(earlier, 1, LEASE_MS)).not.toBeNull();
      await settle(attemptOf(earlier, 2, 'delivered'), { status: 'delivered' });
      expect(await dueIds([webhookId])).toEqual([later]);
      expect(await deliveries.claim(later, 0, LEASE_MS)).not.toBeNull();
    });

    it('lets the next delivery of a resource go when the one before it failed for good', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const first = await insertDelivery(db.sql, webhookId, 'doc_3');
      const second = await insertDelivery(db.sql, webhookId, 'doc_3');
      expect(await deliveries.claim(first, 0, LEASE_MS)).not.toBeNull();
      await settle(attemptOf(first, 1, 'failed'), { status: 'failed' });
      expect(await dueIds([webhookId])).toEqual([second]);
    });
  });

  describe('settle', () => {
    it('records a failed attempt and sets when the next one is due', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const deliveryId = await insertDelivery(db.sql, webhookId, 'ds_retry');
      await deliveries.claim(deliveryId, 0, LEASE_MS);
      const retryAt = new Date(Date.now() + 300_000);
      await settle(attemptOf(deliveryId, 1, 'failed'), { retryAt });
      const { rows } = await db.sql.query<{ next_attempt_at: Date }>(
        'SELECT next_attempt_at FROM webhook_deliveries WHERE id = $1',
        [deliveryId],
      );
      expect(rows[0].next_attempt_at.getTime()).toBe(retryAt.getTime());
      expect(await row(deliveryId)).toMatchObject({ status: 'pending', attempts: 1, completed: false });
      const attempts = await db.sql.query(
        'SELECT attempt, outcome, status_code FROM webhook_attempts WHERE delivery_id = $1',
        [deliveryId],
      );
      expect(attempts.rows).toEqual([{ attempt: 1, outcome: 'failed', status_code: 503 }]);
      expect(await deliveries.claim(deliveryId, 1, LEASE_MS)).toBeNull(); // not due before retryAt
    });

    it('ends a delivery that was delivered', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const deliveryId = await insertDelivery(db.sql, webhookId, 'ds_done');
      await deliveries.claim(deliveryId, 0, LEASE_MS);
      await settle(attemptOf(deliveryId, 1, 'delivered'), { status: 'delivered' });
      expect(await row(deliveryId)).toMatchObject({ status: 'delivered', attempts: 1, completed: true });
    });

    it('records an attempt that outlived its claim, without overwriting what the later attempt decided', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const deliveryId = await insertDelivery(db.sql, webhookId, 'ds_stale');
      await deliveries.claim(deliveryId, 0, 100);
      await new Promise((resolve) => setTimeout(resolve, 250));
      await deliveries.claim(deliveryId, 1, LEASE_MS); // the sweep's retry, while attempt 1 still runs
      await settle(attemptOf(deliveryId, 2, 'delivered'), { status: 'delivered' });
      await settle(attemptOf(deliveryId, 1, 'failed'), { status: 'failed' });
      expect(await row(deliveryId)).toMatchObject({ status: 'delivered', attempts: 2 });
      const attempts = await db.sql.query(
        'SELECT attempt, outcome FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt',
        [deliveryId],
      );
      expect(attempts.rows).toEqual([
        { attempt: 1, outcome: 'failed' },
        { attempt: 2, outcome: 'delivered' },
      ]);
    });
  });

  it('purges the deliveries that ended past retention, with their attempts, and never a pending one', async () => {
    const webhookId = await insertWebhook(db.sql, accountId);
    const ended = await insertDelivery(db.sql, webhookId, 'ds_old', { status: 'delivered' });
    const pending = await insertDelivery(db.sql, webhookId, 'ds_old');
    const recent = await insertDelivery(db.sql, webhookId, 'ds_new', { status: 'failed' });
    await db.sql.query(
      `INSERT INTO webhook_attempts (id, delivery_id, attempt, outcome, duration_ms, started_at)
       VALUES ($1, $2, 1, 'delivered', 5, now())`,
      [newId('att'), ended],
    );
    await db.sql.query(
      `UPDATE webhook_deliveries SET created_at = now() - interval '31 days' WHERE id = ANY($1)`,
      [[ended, pending]],
    );
    await deliveries.purgeEnded(30);
    const { rows } = await db.sql.query<{ id: string }>(
      'SELECT id FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY seq',
      [webhookId],
    );
    expect(rows.map((r) => r.id)).toEqual([pending, recent]);
    const attempts = await db.sql.query('SELECT 1 FROM webhook_attempts WHERE delivery_id = $1', [ended]);
    expect(attempts.rows).toEqual([]);
  });

  describe('automatic disabling', () => {
    const outcomes = (webhookId: string) =>
      db.dataSource.transaction((tx) => deliveries.recentOutcomes(tx, webhookId));

    it('counts the deliveries that ended in the last 24 hours and since the webhook was last turned on', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const ids = [
        await insertDelivery(db.sql, webhookId, 'ds_x', { status: 'failed' }),
        await insertDelivery(db.sql, webhookId, 'ds_x', { status: 'delivered' }),
        await insertDelivery(db.sql, webhookId, 'ds_x', { status: 'failed' }),
        await insertDelivery(db.sql, webhookId, 'ds_x', { status: 'failed' }),
        await insertDelivery(db.sql, webhookId, 'ds_x'),
      ];
      await db.sql.query(`UPDATE webhooks SET enabled_at = now() - interval '2 days' WHERE id = $1`, [
        webhookId,
      ]);
      await db.sql.query(
        `UPDATE webhook_deliveries SET completed_at = now() - interval '1 hour' WHERE id = ANY($1)`,
        [ids.slice(0, 3)],
      );
      await db.sql.query(
        `UPDATE webhook_deliveries SET completed_at = now() - interval '25 hours' WHERE id = $1`,
        [ids[3]],
      );
      expect(await outcomes(webhookId)).toEqual({ ended: 3, failed: 2 });
      // Turned on again half an hour ago: what ended before does not count.
      await db.sql.query(`UPDATE webhooks SET enabled_at = now() - interval '30 minutes' WHERE id = $1`, [
        webhookId,
      ]);
      expect(await outcomes(webhookId)).toEqual({ ended: 0, failed: 0 });
    });

    it('turns the webhook off once, failing its pending deliveries and no other', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const delivered = await insertDelivery(db.sql, webhookId, 'ds_y', { status: 'delivered' });
      const pending = await insertDelivery(db.sql, webhookId, 'ds_y');
      const disable = () => db.dataSource.transaction((tx) => deliveries.disable(tx, webhookId, 'failing'));
      expect(await disable()).toBe(true);
      expect(await disable()).toBe(false);
      expect(await row(pending)).toMatchObject({ status: 'failed', completed: true });
      expect(await row(delivered)).toMatchObject({ status: 'delivered' });
      const { rows } = await db.sql.query('SELECT active, disabled_reason FROM webhooks WHERE id = $1', [
        webhookId,
      ]);
      expect(rows).toEqual([{ active: false, disabled_reason: 'failing' }]);
    });

    it("settles one webhook's failures one at a time, so that the second counts the first", async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const first = await insertDelivery(db.sql, webhookId, 'ds_p');
      const second = await insertDelivery(db.sql, webhookId, 'ds_q');
      await deliveries.claim(first, 0, LEASE_MS);
      await deliveries.claim(second, 0, LEASE_MS);
      let counted: Promise<{ ended: number; failed: number }> | undefined;
      await db.dataSource.transaction('READ COMMITTED', async (tx) => {
        await deliveries.lockForFailure(tx, webhookId);
        await deliveries.settle(tx, attemptOf(first, 1, 'failed'), { status: 'failed' });
        counted = db.dataSource.transaction('READ COMMITTED', async (other) => {
          await deliveries.lockForFailure(other, webhookId);
          await deliveries.settle(other, attemptOf(second, 1, 'failed'), { status: 'failed' });
          return deliveries.recentOutcomes(other, webhookId);
        });
        await until(async () => (await waitingOnLocks()) === 1, 5_000);
        expect(await deliveries.recentOutcomes(tx, webhookId)).toEqual({ ended: 1, failed: 1 });
      });
      expect(await counted).toEqual({ ended: 2, failed: 2 });
    });
  });

  describe('hourly limit', () => {
    beforeAll(async () => {
      // The limit is per clock hour: a test that ran across the top of one would see it reset.
      const toNextHour = 3_600_000 - (Date.now() % 3_600_000);
      if (toNextHour < 5_000) await new Promise((resolve) => setTimeout(resolve, toNextHour + 500));
    });

    it('gives concurrent attempts no more slots than the limit', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const taken = await Promise.all(
        Array.from({ length: 6 }, () => deliveries.takeHourlySlot(webhookId, 4)),
      );
      expect(taken.filter(Boolean)).toHaveLength(4);
      expect(await deliveries.takeHourlySlot(webhookId, 4)).toBe(false);
      const { rows } = await db.sql.query('SELECT hour_attempts FROM webhooks WHERE id = $1', [webhookId]);
      expect(rows).toEqual([{ hour_attempts: 4 }]);
    });

    it('counts afresh in a new clock hour', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      await db.sql.query(
        `UPDATE webhooks SET hour_attempts = 4, hour_started_at = date_trunc('hour', now()) - interval '1 hour'
          WHERE id = $1`,
        [webhookId],
      );
      expect(await deliveries.takeHourlySlot(webhookId, 4)).toBe(true);
      const { rows } = await db.sql.query('SELECT hour_attempts FROM webhooks WHERE id = $1', [webhookId]);
      expect(rows).toEqual([{ hour_attempts: 1 }]);
    });

    it('holds a delivery past the limit until the next hour, giving its claimed attempt back', async () => {
      const webhookId = await insertWebhook(db.sql, accountId);
      const deliveryId = await insertDelivery(db.sql, webhookId, 'ds_capped');
      await deliveries.claim(deliveryId, 0, LEASE_MS);
      const at = await deliveries.deferToNextHour(deliveryId);
      const { rows } = await db.sql.query<{ next_hour: Date }>(
        `SELECT date_trunc('hour', now()) + interval '1 hour' AS next_hour`,
      );
      expect(at).toEqual(rows[0].next_hour);
      expect(await row(deliveryId)).toMatchObject({ status: 'pending', attempts: 0 });
      expect(await dueIds([webhookId])).toEqual([]);
      expect(await deliveries.claim(deliveryId, 0, LEASE_MS)).toBeNull();
    });
  });
});
