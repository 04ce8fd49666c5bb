import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Tx } from 'src/database/transaction.js';

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

/** The advisory lock that makes dispatchers take turns (an arbitrary constant of this service). */
const DISPATCH_LOCK = 7_310_120_001;

/**
 * The outbox (`events`) as webhook delivery reads it: the committed events not yet dispatched, their
 * marking once their deliveries exist, and the purge of those past retention. `EventOutbox` writes
 * them.
 */
@Injectable()
export class OutboxRepository {
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

  /** Marks events dispatched, in the transaction that made their deliveries. */
  async markDispatched(tx: Tx, eventSeqs: string[]): Promise<void> {
    await tx.query(`UPDATE events SET dispatched_at = now() WHERE seq = ANY($1::bigint[])`, [eventSeqs]);
  }

  /** Deletes the events dispatched more than `days` ago. */
  async purgeDispatched(days: number): Promise<void> {
    await this.db.query(`DELETE FROM events WHERE dispatched_at < now() - make_interval(days => $1)`, [days]);
  }
}
