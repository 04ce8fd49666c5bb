import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Tx } from 'src/database/transaction.js';

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

/** No earlier delivery of the same resource to the same webhook is still under way. */
const HEAD_OF_LINE = `NOT EXISTS (
  SELECT 1 FROM webhook_deliveries e
   WHERE e.webhook_id = d.webhook_id AND e.resource_id = d.resource_id AND e.status = 'pending' AND e.seq < d.seq)`;

/**
 * The deliveries as the workers move them: made from the outbox's events, found due and first in line,
 * claimed for an attempt, settled, held for the hourly limit, failed with a webhook disabled for
 * failing, and purged past retention. The database is the truth of every delivery: the queue's jobs
 * only say "try this one now", and a claim decides which attempt runs.
 */
@Injectable()
export class DeliveriesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The active webhooks of these accounts, with the events each takes. */
  activeSubscribers(
    tx: Tx,
    accountIds: string[],
  ): Promise<{ id: string; account_id: string; events: string[] }[]> {
    return tx.query(
      `SELECT id, account_id, events FROM webhooks WHERE account_id = ANY($1) AND active ORDER BY id`,
      [accountIds],
    );
  }

  /** Adds the deliveries of dispatched events, in the dispatcher's transaction. */
  async create(tx: Tx, deliveries: NewDelivery[]): Promise<void> {
    if (deliveries.length === 0) return;
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
   * Records an attempt and what follows from it: the delivery done (`delivered` or `failed`), or
   * pending again at `retryAt`.
   */
  async settle(
    tx: Tx,
    attempt: AttemptRecord,
    next: { status: 'delivered' | 'failed' } | { retryAt: Date },
  ): Promise<void> {
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
  }

  /**
   * Makes the failures of one webhook settle one at a time, so that each counts the ones before it
   * (`recentOutcomes`). `NO KEY UPDATE`: new deliveries' foreign keys to the row do not wait for it.
   */
  async lockForFailure(tx: Tx, webhookId: string): Promise<void> {
    await tx.query(`SELECT 1 FROM webhooks WHERE id = $1 FOR NO KEY UPDATE`, [webhookId]);
  }

  /**
   * The webhook's deliveries that ended in the last 24 hours (and since it was last turned on), and how
   * many of them failed: what the rule of automatic disabling counts.
   */
  async recentOutcomes(tx: Tx, webhookId: string): Promise<{ ended: number; failed: number }> {
    const [row] = await tx.query<{ ended: number; failed: number }[]>(
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
  async disable(tx: Tx, webhookId: string, reason: string): Promise<boolean> {
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
  }

  /** Deletes the deliveries (with their attempts) that ended and were made more than `days` ago. */
  async purgeEnded(days: number): Promise<void> {
    await this.db.query(
      `DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < now() - make_interval(days => $1)`,
      [days],
    );
  }
}
