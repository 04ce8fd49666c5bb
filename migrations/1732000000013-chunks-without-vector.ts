import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The chunks that have no vector, by dataset and key: what the catch-up at every start looks for
 * (chunks indexed keyword-only, then embedded once a model is there), found without reading the
 * vectors of datasets that have them all. Building it reads `chunks` once, during which writes to
 * `chunks` wait.
 */
export class ChunksWithoutVector1732000000013 implements MigrationInterface {
  name = 'ChunksWithoutVector1732000000013';

  async up(db: QueryRunner): Promise<void> {
    await db.query(
      `CREATE INDEX chunks_without_vector_idx ON chunks (dataset_seq, seq) WHERE embedding IS NULL`,
    );
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP INDEX chunks_without_vector_idx`);
  }
}
