import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks: an account's subscriptions, the outbox of events (written in the transaction of the change
 * that causes each), and the deliveries of each event to each subscribed webhook with their attempts.
 */
export class Webhooks1732000000012 implements MigrationInterface {
  name = 'Webhooks1732000000012';

  async up(db: QueryRunner): Promise<void> {
    // A rotated secret keeps signing beside the new one until `previous_secret_expires_at`. The
    // attempts of the current clock hour are counted on the row, for the hourly limit.
    await db.query(`
      CREATE TABLE webhooks (
        id                          text PRIMARY KEY,
        account_id                  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
        url                         text NOT NULL,
        events                      text[] NOT NULL,
        description                 text,
        active                      boolean NOT NULL DEFAULT true,
        disabled_reason             text,
        secret                      text NOT NULL,
        previous_secret             text,
        previous_secret_expires_at  timestamptz,
        enabled_at                  timestamptz NOT NULL DEFAULT now(),
        hour_started_at             timestamptz,
        hour_attempts               integer NOT NULL DEFAULT 0,
        created_at                  timestamptz NOT NULL DEFAULT now(),
        updated_at                  timestamptz NOT NULL DEFAULT now()
      )`);
    await db.query(`CREATE INDEX webhooks_account_idx ON webhooks (account_id, created_at, id)`);

    // The outbox. `seq` orders events as their transactions wrote them; `resource_id` (a document's or
    // a dataset's) is what delivery keeps in order per webhook.
    await db.query(`
      CREATE TABLE events (
        seq            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id             text NOT NULL UNIQUE,
        account_id     text NOT NULL,
        event          text NOT NULL,
        resource_id    text NOT NULL,
        data           jsonb NOT NULL,
        created_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
        dispatched_at  timestamptz
      )`);
    await db.query(`CREATE INDEX events_undispatched_idx ON events (seq) WHERE dispatched_at IS NULL`);
    await db.query(
      `CREATE INDEX events_dispatched_idx ON events (dispatched_at) WHERE dispatched_at IS NOT NULL`,
    );

    // One delivery per event and webhook (and per redelivery), with the exact body every attempt sends.
    await db.query(`
      CREATE TABLE webhook_deliveries (
        seq              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id               text NOT NULL UNIQUE,
        webhook_id       text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
        event_id         text NOT NULL,
        event            text NOT NULL,
        resource_id      text NOT NULL,
        body             text NOT NULL,
        status           text NOT NULL DEFAULT 'pending',
        attempts         integer NOT NULL DEFAULT 0,
        next_attempt_at  timestamptz NOT NULL DEFAULT now(),
        created_at       timestamptz NOT NULL DEFAULT now(),
        completed_at     timestamptz,
        CONSTRAINT webhook_deliveries_status CHECK (status IN ('pending', 'delivered', 'failed'))
      )`);
    await db.query(`CREATE INDEX webhook_deliveries_list_idx ON webhook_deliveries (webhook_id, seq)`);
    await db.query(`
      CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (webhook_id, resource_id, seq)
        WHERE status = 'pending'`);
    await db.query(`
      CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`);
    await db.query(`CREATE INDEX webhook_deliveries_age_idx ON webhook_deliveries (created_at)`);

    await db.query(`
      CREATE TABLE webhook_attempts (
        id             text PRIMARY KEY,
        delivery_id    text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
        attempt        integer NOT NULL,
        outcome        text NOT NULL,
        status_code    integer,
        duration_ms    integer NOT NULL,
        error          text,
        response_body  text,
        started_at     timestamptz NOT NULL,
        CONSTRAINT webhook_attempts_outcome CHECK (outcome IN ('delivered', 'failed'))
      )`);
    await db.query(`CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, attempt)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE webhook_attempts`);
    await db.query(`DROP TABLE webhook_deliveries`);
    await db.query(`DROP TABLE events`);
    await db.query(`DROP TABLE webhooks`);
  }
}
