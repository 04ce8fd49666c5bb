import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The search index's state of each dataset moves from `datasets` to a table of the index's own
 * (`src/modules/chunk-index`), which alone writes it: BM25's N and total chunk length, the embedding
 * model and dimension its vectors are of, whether it is being re-embedded, and the dimension of its own
 * HNSW index. `datasets` keeps what the Datasets resource shows. One row per dataset, made with it.
 */
export class DatasetIndex1732000000016 implements MigrationInterface {
  name = 'DatasetIndex1732000000016';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE dataset_index (
        dataset_seq             bigint PRIMARY KEY REFERENCES datasets (seq) ON DELETE CASCADE,
        dataset_id              text NOT NULL UNIQUE REFERENCES datasets (id) ON DELETE CASCADE,
        chunk_count             bigint NOT NULL DEFAULT 0,
        total_chunk_length      bigint NOT NULL DEFAULT 0,
        embedding_model         text,
        embedding_dimensions    integer,
        reembedding             boolean NOT NULL DEFAULT false,
        vector_index_dimensions integer
      )`);
    await db.query(`
      INSERT INTO dataset_index (dataset_seq, dataset_id, chunk_count, total_chunk_length, embedding_model,
                                 embedding_dimensions, reembedding, vector_index_dimensions)
      SELECT seq, id, chunk_count, total_chunk_length, embedding_model, embedding_dimensions, reembedding,
             vector_index_dimensions
        FROM datasets`);
    await db.query(`
      ALTER TABLE datasets
        DROP COLUMN chunk_count, DROP COLUMN total_chunk_length, DROP COLUMN embedding_model,
        DROP COLUMN embedding_dimensions, DROP COLUMN reembedding, DROP COLUMN vector_index_dimensions`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`
      ALTER TABLE datasets
        ADD COLUMN chunk_count bigint NOT NULL DEFAULT 0,
        ADD COLUMN total_chunk_length bigint NOT NULL DEFAULT 0,
        ADD COLUMN embedding_model text,
        ADD COLUMN embedding_dimensions integer,
        ADD COLUMN reembedding boolean NOT NULL DEFAULT false,
        ADD COLUMN vector_index_dimensions integer`);
    await db.query(`
      UPDATE datasets s
         SET chunk_count = i.chunk_count, total_chunk_length = i.total_chunk_length,
             embedding_model = i.embedding_model, embedding_dimensions = i.embedding_dimensions,
             reembedding = i.reembedding, vector_index_dimensions = i.vector_index_dimensions
        FROM dataset_index i
       WHERE i.dataset_seq = s.seq`);
    await db.query(`DROP TABLE dataset_index`);
  }
}
