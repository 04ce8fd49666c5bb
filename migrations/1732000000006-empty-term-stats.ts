import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A term whose last posting goes now loses its `term_stats` row (`removeDocumentChunks`); before, the
 * row stayed with a document frequency of 0, ignored by search, and a dataset with much churn kept
 * every term it had ever held. This removes the rows left so far. It is safe while older processes
 * run: versions come from a sequence, so a term that comes back gets a version no process has seen,
 * and the rows older writers may still leave at 0 are ignored by search as before.
 */
export class EmptyTermStats1732000000006 implements MigrationInterface {
  name = 'EmptyTermStats1732000000006';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`DELETE FROM term_stats WHERE df = 0`);
  }

  async down(): Promise<void> {
    // The rows removed carried nothing: a term at df 0 is the same to search as a term with no row.
  }
}
