import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Stores an idempotent request's response as the text it was, not as `jsonb`, which keeps one copy of
 * each key, sorted by length and then by bytes: a replay had the first response's fields in another
 * order (`id, name, language, metadata, ...`), where a replay is meant to be the same body. `json`
 * keeps the text as written, and PostgreSQL still checks that it is JSON. Responses stored before keep
 * the order `jsonb` gave them until they expire (24 hours). Processes still running the previous build
 * write the same JSON text to either type.
 */
export class IdempotentReplayAsSent1732000000008 implements MigrationInterface {
  name = 'IdempotentReplayAsSent1732000000008';

  async up(db: QueryRunner): Promise<void> {
    await db.query(
      `ALTER TABLE idempotency_keys ALTER COLUMN response_body TYPE json USING response_body::json`,
    );
  }

  /** A stored body holding `\u0000` (which `json` keeps and `jsonb` refuses) would fail this; the API stores none. */
  async down(db: QueryRunner): Promise<void> {
    await db.query(
      `ALTER TABLE idempotency_keys ALTER COLUMN response_body TYPE jsonb USING response_body::jsonb`,
    );
  }
}
