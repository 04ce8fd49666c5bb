import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A document replaced in place (PUT) keeps its previous version's chunks searchable until the new one is
 * indexed, whatever its status meanwhile:
 * - `chunks_created` is the number of chunks the document has in the index, null while it has none (a
 *   first run, a reprocess, which removes them at once); set to null here where the status says the
 *   document has none, which is every status but `ready` for rows written before replacements;
 * - `chunks_embedded` and `chunks_reused` say how many of the last run's chunks the model embedded and
 *   how many kept the vector of an unchanged chunk of the version they replaced;
 * - `dataset_index.chunks_removed` counts the chunks ever removed from the dataset's index: two legs
 *   of one search that read different counts saw different versions of some document.
 */
export class DocumentReplacement1732000000022 implements MigrationInterface {
  name = 'DocumentReplacement1732000000022';

  async up(db: QueryRunner): Promise<void> {
    await db.query(
      `UPDATE documents SET chunks_created = NULL WHERE status <> 'ready' AND chunks_created IS NOT NULL`,
    );
    await db.query(
      `ALTER TABLE documents ADD COLUMN chunks_embedded integer, ADD COLUMN chunks_reused integer`,
    );
    await db.query(`ALTER TABLE dataset_index ADD COLUMN chunks_removed bigint NOT NULL DEFAULT 0`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE dataset_index DROP COLUMN chunks_removed`);
    await db.query(`ALTER TABLE documents DROP COLUMN chunks_embedded, DROP COLUMN chunks_reused`);
  }
}
