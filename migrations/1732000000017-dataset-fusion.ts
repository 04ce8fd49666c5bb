import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The weights a dataset's hybrid searches fuse their legs at, as the service chose them from the
 * dataset's own documents (`src/modules/search/fusion-tuning.service.ts`), with the evidence: how
 * many pseudo-queries, each leg's figure and each weight's. The chunk count and model it was chosen
 * at decide when it is chosen again. No row: not chosen yet.
 */
export class DatasetFusion1732000000017 implements MigrationInterface {
  name = 'DatasetFusion1732000000017';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE dataset_fusion (
        dataset_seq     bigint PRIMARY KEY REFERENCES datasets (seq) ON DELETE CASCADE,
        keyword_weight  real NOT NULL,
        semantic_weight real NOT NULL,
        chosen_at       timestamptz NOT NULL DEFAULT now(),
        embedding_model text NOT NULL,
        chunk_count     bigint NOT NULL,
        pseudo_queries  integer NOT NULL,
        evidence        jsonb NOT NULL
      )`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE dataset_fusion`);
  }
}
