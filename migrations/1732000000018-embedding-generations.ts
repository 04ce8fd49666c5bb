import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A dataset's next generation of vectors, built beside the one its searches use: `next_embedding`
 * holds each chunk's vector of the model in `dataset_index.next_embedding_model` while a re-embedding
 * runs, and the switch moves them into `embedding` in one transaction (ReembedService). No index
 * covers them: nothing searches them before the switch.
 *
 * A dataset left half re-embedded under the earlier scheme (`reembedding`, its vectors of two models)
 * has its vectors dropped: it is then a dataset without a model, which the catch-up embeds with the
 * service's at its next start.
 */
export class EmbeddingGenerations1732000000018 implements MigrationInterface {
  name = 'EmbeddingGenerations1732000000018';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE chunks ADD COLUMN next_embedding vector`);
    await db.query(`
      ALTER TABLE dataset_index
        ADD COLUMN next_embedding_model      text,
        ADD COLUMN next_embedding_dimensions integer,
        ADD COLUMN reembed_requested_at      timestamptz,
        ADD CONSTRAINT dataset_index_next_model CHECK (
          (next_embedding_model IS NULL) = (next_embedding_dimensions IS NULL)
          AND (next_embedding_model IS NULL) = (reembed_requested_at IS NULL))`);
    await db.query(`
      UPDATE chunks c SET embedding = NULL FROM dataset_index i
       WHERE i.dataset_seq = c.dataset_seq AND i.reembedding AND c.embedding IS NOT NULL`);
    await db.query(`
      UPDATE dataset_index SET embedding_model = NULL, embedding_dimensions = NULL WHERE reembedding`);
    await db.query(`ALTER TABLE dataset_index DROP COLUMN reembedding`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE dataset_index ADD COLUMN reembedding boolean NOT NULL DEFAULT false`);
    await db.query(`
      ALTER TABLE dataset_index DROP CONSTRAINT dataset_index_next_model,
        DROP COLUMN next_embedding_model, DROP COLUMN next_embedding_dimensions,
        DROP COLUMN reembed_requested_at`);
    await db.query(`ALTER TABLE chunks DROP COLUMN next_embedding`);
  }
}
