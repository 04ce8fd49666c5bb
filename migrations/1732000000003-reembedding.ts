import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A dataset being re-embedded (`datasets reembed`): until the command has rewritten every vector, the
 * vector leg leaves the dataset out, so that it never ranks two models' vectors together, and chunks
 * indexed meanwhile get no vector (the command embeds them at the end).
 */
export class Reembedding1732000000003 implements MigrationInterface {
  name = 'Reembedding1732000000003';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE datasets ADD COLUMN reembedding boolean NOT NULL DEFAULT false`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE datasets DROP COLUMN reembedding`);
  }
}
