import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Keeps each chunk's embedding in its row. PostgreSQL moves values out of a row into the table's
 * TOAST table once the row passes `toast_tuple_target` (2 KB by default), and pgvector's type lets it
 * move the vector first. A chunk of the default 256 tokens (about 1.3 KB of text) with a 384-dimension
 * vector (1.5 KB) passes 2 KB, so nearly every vector was stored apart from its row, and every vector
 * read paid a second lookup: the vector leg's exact cosine for its 50 hits, and above all the exact
 * scan of a small dataset, which reads every vector of the dataset (20,000 such chunks: 51 ms out of
 * line, 22 ms in the row; docs/benchmarks.md). With the vector's storage `main` and the target at half
 * a page, a row of up to 4 KB stays whole; a larger one has its text compressed, then moved out, before
 * the vector is. Both settings change only how rows are written from now on: existing chunks keep their
 * layout until reprocessed, or until `VACUUM FULL chunks` rewrites the table (which locks it).
 */
export class InlineEmbeddings1732000000007 implements MigrationInterface {
  name = 'InlineEmbeddings1732000000007';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN`);
    await db.query(`ALTER TABLE chunks SET (toast_tuple_target = 4080)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE chunks RESET (toast_tuple_target)`);
    await db.query(`ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE EXTERNAL`);
  }
}
