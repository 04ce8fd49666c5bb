import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-dataset term statistics for the keyword leg: each term's document frequency (how many chunks
 * hold it) and a version that changes whenever the term's postings change. Both are written by the
 * transactions that add or remove postings, under the dataset's lock, so they are exact; the version
 * lets a search process keep a term's postings in memory and know, in the snapshot of each query,
 * whether its copy is still the current one. Versions come from one sequence, so a term removed and
 * added again never repeats a version.
 */
export class TermStats1732000000002 implements MigrationInterface {
  name = 'TermStats1732000000002';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`CREATE SEQUENCE term_stats_version`);
    await db.query(`
      CREATE TABLE term_stats (
        dataset_seq bigint NOT NULL REFERENCES datasets (seq) ON DELETE CASCADE,
        term        text NOT NULL,
        df          integer NOT NULL CHECK (df >= 0),
        version     bigint NOT NULL DEFAULT nextval('term_stats_version'),
        PRIMARY KEY (dataset_seq, term) INCLUDE (df, version)
      )`);
    // No postings may be written while the statistics are counted. Writers of an older version, which
    // know nothing of term_stats, must be stopped before this migration runs (docs/architecture.md).
    await db.query(`LOCK TABLE chunk_terms IN SHARE MODE`);
    await db.query(`
      INSERT INTO term_stats (dataset_seq, term, df)
      SELECT dataset_seq, term, count(*) FROM chunk_terms GROUP BY dataset_seq, term`);
    // The keyword leg reads postings by index-only scans, which visit the table for every row on a
    // page not yet marked all-visible. Postings are only ever inserted and deleted, and by default an
    // insert-only table is vacuumed after 20% growth: mark pages visible much sooner.
    for (const table of ['chunk_terms', 'term_stats']) {
      await db.query(
        `ALTER TABLE ${table} SET (autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_scale_factor = 0.02)`,
      );
    }
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE term_stats`);
    await db.query(
      `ALTER TABLE chunk_terms RESET (autovacuum_vacuum_insert_scale_factor, autovacuum_vacuum_scale_factor)`,
    );
    await db.query(`DROP SEQUENCE term_stats_version`);
  }
}
