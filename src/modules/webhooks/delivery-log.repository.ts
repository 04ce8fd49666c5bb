import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

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

/**
 * The delivery log as the API shows it: a webhook's deliveries with their attempts, and redelivery,
 * which adds a delivery to it. The service has checked the webhook is the caller's account's first.
 */
@Injectable()
export class DeliveryLogRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** A webhook's deliveries, newest first, each with its attempts in order (the delivery log). */
  async listByWebhook(
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
}
