import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Tx } from 'src/database/transaction.js';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** An event of the outbox not yet turned into deliveries. */
export interface OutboxEvent {
  seq: string;
  id: string;
  accountId: string;
  event: string;
  resourceId: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

export interface NewDelivery {
  id: string;
  webhookId: string;
  eventId: string;
  event: string;
  resourceId: string;
  body: string;
}

/** A delivery claimed for one attempt, with what sending it needs. */
export interface ClaimedDelivery extends NewDelivery {
  /** This attempt's number, 1 first. */
  attempt: number;
  url: string;
  secrets: string[];
}

export interface AttemptRecord {
  id: string;
  deliveryId: string;
  attempt: number;
  outcome: 'delivered' | 'failed';
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
  startedAt: Date;
}

/** The advisory lock that makes dispatchers take turns (an arbitrary constant of this service). */
const DISPATCH_LOCK = 7_310_120_001;

/** A delivery as its webhook's log shows it. */
export interface DeliveryLogEntry {
  id: string;
  eventId: string;
  event: string;
  status: DeliveryStatus;
  nextAttemptAt: Date;
  createdAt: Date;
  completedAt: Date | null;
  attempts: {
    id: string;
    attempt: number;
    outcome: 'delivered' | 'failed';
    statusCode: number | null;
    durationMs: number;
    error: string | null;
    responseBody: string | null;
    startedAt: string;
  }[];
}

/** No earlier delivery of the same resource to the same webhook is still under way. */
const HEAD_OF_LINE = `NOT EXISTS (
  SELECT 1 FROM webhook_deliveries e
   WHERE e.webhook_id = d.webhook_id AND e.resource_id = d.resource_id AND e.status = 'pending' AND e.seq < d.seq)`;

/**
 * The outbox's reads, and the deliveries and attempts of webhooks. The database is the truth of every
 * delivery: the queue's jobs only say "try this one now", and a claim decides which attempt runs.
 */
@Injectable()
export class WebhookDeliveriesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * The oldest undispatched events, for one dispatcher at a time (a transaction-scoped advisory lock):
   * deliveries must be made in the events' order, which dispatchers working side by side would not
   * keep. Dispatching is a few statements per batch; the sending is what runs in parallel.
   */
  async undispatched(tx: Tx, limit: number): Promise<OutboxEvent[]> {
    await tx.query(`SELECT pg_advisory_xact_lock(${DISPATCH_LOCK})`);
    const rows = await tx.query<
      {
        seq: string;
        id: string;
        account_id: string;
        event: string;
        resource_id: string;
        data: Record<string, unknown>;
        created_at: Date;
      }[]
    >(
      `SELECT seq, id, account_id, event, resource_id, data, created_at FROM events
        WHERE dispatched_at IS NULL ORDER BY seq LIMIT $1`,
      [limit],
    );
    return rows.map((row) => ({
      seq: row.seq,
      id: row.id,
      accountId: row.account_id,
      event: row.event,
      resourceId: row.resource_id,
      data: row.data,
      createdAt: row.created_at,
    }));
  }

  /** The active webhooks of these accounts, with the events each takes. */
  subscribers(tx: Tx, accountIds: string[]): Promise<{ id: string; account_id: string; events: string[] }[]> {
    return tx.query(
      `SELECT id, account_id, events FROM webhooks WHERE account_id = ANY($1) AND active ORDER BY id`,
      [accountIds],
    );
  }

  /** Adds deliveries and marks their events dispatched, in the dispatcher's transaction. */
  async dispatch(tx: Tx, deliveries: NewDelivery[], eventSeqs: string[]): Promise<void> {
    if (deliveries.length > 0) {
      await tx.query(
        `INSERT INTO webhook_deliveries (id, webhook_id, event_id, event, resource_id, body)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])`,
        [
          deliveries.map((d) => d.id),
          deliveries.map((d) => d.webhookId),
          deliveries.map((d) => d.eventId),
          deliveries.map((d) => d.event),
          deliveries.map((d) => d.resourceId),
          deliveries.map((d) => d.body),
        ],
      );
    }
    await tx.query(`UPDATE events SET dispatched_at = now() WHERE seq = ANY($1::bigint[])`, [eventSeqs]);
  }

  /**
   * Deliveries due now that are first in line for their resource, of active webhooks: those to try.
   * `webhookIds` narrows it to some webhooks; with none, all (the sweep).
   */
  due(limit: number, webhookIds?: string[]): Promise<{ deliveryId: string; attempts: number }[]> {
    return this.db.query(
      `SELECT d.id AS "deliveryId", d.attempts FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id AND w.active
        WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND ${HEAD_OF_LINE}
          ${webhookIds ? 'AND d.webhook_id = ANY($2)' : ''}
        ORDER BY d.next_attempt_at LIMIT $1`,
      webhookIds ? [limit, webhookIds] : [limit],
    );
  }

  /**
   * Claims attempt `attempts + 1` of a delivery: only if it is still pending, due, first in line, its
   * webhook active, and no other attempt claimed it first. The claim pushes `next_attempt_at` past
   * the attempt's time (`leaseMs`), so that a worker that dies mid-attempt leaves it to the sweep.
   */
  async claim(deliveryId: string, attempts: number, leaseMs: number): Promise<ClaimedDelivery | null> {
    const [rows] = await this.db.query<
      [
        {
          id: string;
          webhook_id: string;
          event_id: string;
          event: string;
          resource_id: string;
          body: string;
          attempts: number;
          url: string;
          secret: string;
          previous_secret: string | null;
        }[],
        number,
      ]
    >(
      `UPDATE webhook_deliveries d
          SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => $3::double precision / 1000)
         FROM webhooks w
        WHERE d.id = $1 AND d.attempts = $2 AND d.status = 'pending' AND d.next_attempt_at <= now()
          AND w.id = d.webhook_id AND w.active AND ${HEAD_OF_LINE}
        RETURNING d.id, d.webhook_id, d.event_id, d.event, d.resource_id, d.body, d.attempts, w.url, w.secret,
                  CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END AS previous_secret`,
      [deliveryId, attempts, leaseMs],
    );
    // An UPDATE answers its rows and its count.
    const row = rows[0];
    if (!row) return null;
    return {
      id: row.id,
      webhookId: row.webhook_id,
      eventId: row.event_id,
      event: row.event,
      resourceId: row.resource_id,
      body: row.body,
      attempt: row.attempts,
      url: row.url,
      secrets: row.previous_secret ? [row.secret, row.previous_secret] : [row.secret],
    };
  }

  /**
   * Takes one of the webhook's attempts of the current clock hour, if `limit` leaves one: counted on the
   * webhook's row, whose lock makes concurrent attempts take their turn, so that the limit holds.
   */
  async takeHourlySlot(webhookId: string, limit: number): Promise<boolean> {
    const [, affected] = await this.db.query<[unknown, number]>(
      `UPDATE webhooks
          SET hour_attempts = CASE WHEN hour_started_at = date_trunc('hour', now()) THEN hour_attempts + 1 ELSE 1 END,
              hour_started_at = date_trunc('hour', now())
        WHERE id = $1 AND (hour_started_at IS DISTINCT FROM date_trunc('hour', now()) OR hour_attempts < $2)`,
      [webhookId, limit],
    );
    return affected > 0;
  }

  /** Gives back a claimed attempt, uncounted, and puts the delivery off until the next clock hour. */
  async deferToNextHour(deliveryId: string): Promise<Date> {
    const [[{ at }]] = await this.db.query<[{ at: Date }[], number]>(
      `UPDATE webhook_deliveries
          SET attempts = attempts - 1, next_attempt_at = date_trunc('hour', now()) + interval '1 hour'
        WHERE id = $1 RETURNING next_attempt_at AS at`,
      [deliveryId],
    );
    return at;
  }

  /**
   * Records an attempt and what follows from it, in one transaction: the delivery done (`delivered`
   * or `failed`), or pending again at `retryAt`.
   */
  async settle(
    attempt: AttemptRecord,
    next: { status: 'delivered' | 'failed' } | { retryAt: Date },
  ): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO webhook_attempts (id, delivery_id, attempt, outcome, status_code, duration_ms, error, response_body, started_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [
          attempt.id,
          attempt.deliveryId,
          attempt.attempt,
          attempt.outcome,
          attempt.statusCode,
          attempt.durationMs,
          attempt.error,
          attempt.responseBody,
          attempt.startedAt,
        ],
      );
      // Only while this attempt is still the delivery's last: one that outlived its claim (a stalled
      // worker) must not overwrite what a later attempt decided.
      const current = `id = $1 AND attempts = $3 AND status = 'pending'`;
      if ('status' in next) {
        await tx.query(`UPDATE webhook_deliveries SET status = $2, completed_at = now() WHERE ${current}`, [
          attempt.deliveryId,
          next.status,
          attempt.attempt,
        ]);
      } else {
        await tx.query(`UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE ${current}`, [
          attempt.deliveryId,
          next.retryAt,
          attempt.attempt,
        ]);
      }
    });
  }

  /**
   * The deliveries of the last 24 hours that ended, and how many of them failed, for the rule that
   * disables a webhook failing more than 80% of at least `minimum` of them.
   */
  async recentOutcomes(webhookId: string): Promise<{ ended: number; failed: number }> {
    const [row] = await this.db.query<{ ended: number; failed: number }[]>(
      `SELECT count(*)::int AS ended, count(*) FILTER (WHERE d.status = 'failed')::int AS failed
         FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
        WHERE d.webhook_id = $1 AND d.completed_at > greatest(now() - interval '24 hours', w.enabled_at)`,
      [webhookId],
    );
    return row;
  }

  /**
   * Turns a webhook off for failing, and fails its pending deliveries with it (they would otherwise wait,
   * growing stale, for a re-enabling that may never come); false if it was already off.
   */
  disable(webhookId: string, reason: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [, affected] = await tx.query<[unknown, number]>(
        `UPDATE webhooks SET active = false, disabled_reason = $2, updated_at = now() WHERE id = $1 AND active`,
        [webhookId, reason],
      );
      if (affected === 0) return false;
      await tx.query(
        `UPDATE webhook_deliveries SET status = 'failed', completed_at = now()
          WHERE webhook_id = $1 AND status = 'pending'`,
        [webhookId],
      );
      return true;
    });
  }

  /** A webhook's deliveries, newest first, each with its attempts in order (the delivery log). */
  async list(
    webhookId: string,
    status: DeliveryStatus | undefined,
    limit: number,
    offset: number,
  ): Promise<{ items: DeliveryLogEntry[]; total: number }> {
    const filter = status ? 'AND d.status = $4' : '';
    const values = status ? [webhookId, limit, offset, status] : [webhookId, limit, offset];
    const [items, [{ total }]] = await Promise.all([
      this.db.query<DeliveryLogEntry[]>(
        `SELECT d.id, d.event_id AS "eventId", d.event, d.status, d.next_attempt_at AS "nextAttemptAt",
                d.created_at AS "createdAt", d.completed_at AS "completedAt",
                coalesce((SELECT json_agg(json_build_object(
                           'id', a.id, 'attempt', a.attempt, 'outcome', a.outcome, 'statusCode', a.status_code,
                           'durationMs', a.duration_ms, 'error', a.error, 'responseBody', a.response_body,
                           'startedAt', a.started_at) ORDER BY a.attempt)
                            FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]') AS attempts
           FROM webhook_deliveries d
          WHERE d.webhook_id = $1 ${filter}
          ORDER BY d.seq DESC LIMIT $2 OFFSET $3`,
        values,
      ),
      this.db.query<{ total: number }[]>(
        `SELECT count(*)::int AS total FROM webhook_deliveries d WHERE d.webhook_id = $1 ${status ? 'AND d.status = $2' : ''}`,
        status ? [webhookId, status] : [webhookId],
      ),
    ]);
    return { items, total };
  }

  /**
   * A new delivery of a delivery's event, with the same body, behind whatever of the same resource
   * is still under way; null when the delivery is not the webhook's.
   */
  async redeliver(
    webhookId: string,
    deliveryId: string,
    newDeliveryId: string,
  ): Promise<DeliveryLogEntry | null> {
    const [row] = await this.db.query<DeliveryLogEntry[]>(
      `INSERT INTO webhook_deliveries (id, webhook_id, event_id, event, resource_id, body)
       SELECT $3, webhook_id, event_id, event, resource_id, body FROM webhook_deliveries
        WHERE id = $2 AND webhook_id = $1
       RETURNING id, event_id AS "eventId", event, status, next_attempt_at AS "nextAttemptAt",
                 created_at AS "createdAt", completed_at AS "completedAt", '[]'::json AS attempts`,
      [webhookId, deliveryId, newDeliveryId],
    );
    return row ?? null;
  }

  /** Deletes what is older than the retention period: ended deliveries (with their attempts), dispatched events. */
  async purge(days: number): Promise<void> {
    await this.db.query(
      `DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < now() - make_interval(days => $1)`,
      [days],
    );
    await this.db.query(`DELETE FROM events WHERE dispatched_at < now() - make_interval(days => $1)`, [days]);
  }
}
