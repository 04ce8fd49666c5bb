import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every table of a dataset's content carries the dataset's `seq`, the key Citus distributes them by
 * (docs/citus.md): `documents` and `document_sources` gain it. Postings of deleted chunks are deleted
 * by the statements that delete the chunks (`ChunkIndexRepository`, `DatasetsRepository`), not by a
 * trigger: Citus refuses triggers on distributed tables.
 *
 * On a database with the citus extension the same migration then distributes the content by
 * `dataset_seq`, co-located, so that a document's upload, its indexing, the BM25 statistics and a
 * search of one dataset run in one shard: `accounts` and `datasets` become reference tables (every
 * node joins them locally), and the other account-level tables stay plain tables on the coordinator.
 * Keys of distributed tables must hold the distribution column, and Citus refuses identity columns
 * there: `chunks.seq` takes its values from a plain sequence.
 */
export class DistributableContent1732000000023 implements MigrationInterface {
  name = 'DistributableContent1732000000023';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE documents ADD COLUMN dataset_seq bigint`);
    await db.query(`UPDATE documents d SET dataset_seq = s.seq FROM datasets s WHERE s.id = d.dataset_id`);
    await db.query(`ALTER TABLE documents ALTER COLUMN dataset_seq SET NOT NULL`);
    await db.query(`ALTER TABLE document_sources ADD COLUMN dataset_seq bigint`);
    await db.query(`
      UPDATE document_sources s SET dataset_seq = d.dataset_seq FROM documents d WHERE d.id = s.document_id`);
    await db.query(`ALTER TABLE document_sources ALTER COLUMN dataset_seq SET NOT NULL`);
    await db.query(`DROP TRIGGER chunks_delete_postings ON chunks`);
    await db.query(`DROP FUNCTION delete_chunk_postings()`);
    // The fusion tuning's sweep looks for a dataset's documents still processing by its seq.
    await db.query(
      `CREATE INDEX documents_processing_dataset_idx ON documents (dataset_seq) WHERE status = 'processing'`,
    );
    if (await hasCitus(db)) await distribute(db);
  }

  async down(db: QueryRunner): Promise<void> {
    if (await hasCitus(db)) {
      throw new Error('A distributed schema is not undistributed by a migration (docs/citus.md)');
    }
    await db.query(`
      CREATE FUNCTION delete_chunk_postings() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        EXECUTE 'DELETE FROM chunk_terms p USING gone g WHERE p.chunk_seq = g.seq';
        RETURN NULL;
      END $$`);
    await db.query(`
      CREATE TRIGGER chunks_delete_postings AFTER DELETE ON chunks
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION delete_chunk_postings()`);
    await db.query(`DROP INDEX documents_processing_dataset_idx`);
    await db.query(`ALTER TABLE document_sources DROP COLUMN dataset_seq`);
    await db.query(`ALTER TABLE documents DROP COLUMN dataset_seq`);
  }
}

async function hasCitus(db: QueryRunner): Promise<boolean> {
  const rows = (await db.query(`SELECT 1 FROM pg_extension WHERE extname = 'citus'`)) as unknown[];
  return rows.length > 0;
}

/** Citus allows one constraint change an ALTER TABLE: each statement below makes one. */
async function distribute(db: QueryRunner): Promise<void> {
  // Keys of the content tables hold dataset_seq; foreign keys between them carry it.
  await db.query(`ALTER TABLE chunks DROP CONSTRAINT chunks_document_id_fkey`);
  await db.query(`ALTER TABLE document_sources DROP CONSTRAINT document_sources_document_id_fkey`);
  await db.query(`ALTER TABLE document_sources DROP CONSTRAINT document_sources_pkey`);
  await db.query(`ALTER TABLE document_sources ADD PRIMARY KEY (dataset_seq, document_id)`);
  await db.query(`ALTER TABLE documents DROP CONSTRAINT documents_pkey`);
  await db.query(`ALTER TABLE documents ADD PRIMARY KEY (dataset_seq, id)`);
  await db.query(`ALTER TABLE chunks DROP CONSTRAINT chunks_pkey`);
  await db.query(`ALTER TABLE chunks ADD PRIMARY KEY (dataset_seq, seq)`);
  await db.query(`ALTER TABLE chunks DROP CONSTRAINT chunks_id_key`);
  await db.query(`ALTER TABLE chunks ADD UNIQUE (dataset_seq, id)`);
  await db.query(`ALTER TABLE dataset_index DROP CONSTRAINT dataset_index_dataset_id_key`);
  await db.query(`CREATE INDEX dataset_index_dataset_id_idx ON dataset_index (dataset_id)`);
  await db.query(`ALTER TABLE chunks ALTER COLUMN seq DROP IDENTITY`);
  await db.query(`CREATE SEQUENCE chunks_seq_seq OWNED BY chunks.seq`);
  await db.query(`SELECT setval('chunks_seq_seq', coalesce((SELECT max(seq) FROM chunks), 0) + 1, false)`);
  await db.query(`ALTER TABLE chunks ALTER COLUMN seq SET DEFAULT nextval('chunks_seq_seq')`);

  // Account-level tables stay plain tables on the coordinator, which Citus leaves to PostgreSQL to
  // plan: a foreign key to the reference table would make them Citus local tables, held to the
  // distributed planner's rules. Accounts are never deleted, so the keys' cascades are not missed.
  for (const table of ['api_keys', 'idempotency_keys', 'users', 'oauth_grants', 'webhooks']) {
    await db.query(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_account_id_fkey`);
  }
  await db.query(`SELECT create_reference_table('accounts')`);
  await db.query(`SELECT create_reference_table('datasets')`);
  // The shard of a dataset's content is picked by its seq; the first table sets the co-location group.
  await db.query(`SELECT create_distributed_table('documents', 'dataset_seq')`);
  for (const table of [
    'document_sources',
    'chunks',
    'chunk_terms',
    'term_stats',
    'dataset_index',
    'dataset_fusion',
  ]) {
    await db.query(`SELECT create_distributed_table($1, 'dataset_seq', colocate_with => 'documents')`, [
      table,
    ]);
  }
  await db.query(`
    ALTER TABLE document_sources ADD FOREIGN KEY (dataset_seq, document_id)
      REFERENCES documents (dataset_seq, id) ON DELETE CASCADE`);
  await db.query(`
    ALTER TABLE chunks ADD FOREIGN KEY (dataset_seq, document_id)
      REFERENCES documents (dataset_seq, id) ON DELETE CASCADE`);
}
