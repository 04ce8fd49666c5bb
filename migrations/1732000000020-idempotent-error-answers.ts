import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The status of a stored error answer: a bulk upload that fails after creating its first documents
 * keeps its Idempotency-Key with that answer (`PartlyAppliedError`), so that a retry replays it
 * rather than creating them again. Null, as for every record stored before, is the route's success.
 */
export class IdempotentErrorAnswers1732000000020 implements MigrationInterface {
  name = 'IdempotentErrorAnswers1732000000020';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE idempotency_keys ADD COLUMN response_status smallint`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE idempotency_keys DROP COLUMN response_status`);
  }
}
