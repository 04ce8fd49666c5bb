import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The dimension of a dataset's own HNSW index (`DatasetVectorIndexRepository`), once it is built and
 * valid: the vector leg then counts the dataset's chunks, not the whole dimension's, as the walk's
 * index. Null while it has none; a value other than the dataset's `embedding_dimensions` names an
 * index of an earlier model, which the vector leg does not count on.
 */
export class DatasetVectorIndex1732000000014 implements MigrationInterface {
  name = 'DatasetVectorIndex1732000000014';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE datasets ADD COLUMN vector_index_dimensions integer`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE datasets DROP COLUMN vector_index_dimensions`);
  }
}
