import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Postings lose their foreign key to `chunks`: it checked every posting as it was inserted, about 90
 * a chunk of prose, and each check is a query of its own, planned once per connection. A connection
 * that first wrote while `chunks` was small keeps a sequential scan for the check, and a fresh
 * deployment's ingestion slowed down as the table grew (docs/ingestion.md, Indexing). Postings are
 * written only beside their chunks, in the statement that inserts them (`ChunkIndexRepository`); what
 * the key's cascade did, a trigger does, once a statement: the postings of deleted chunks go with them,
 * however the chunks are deleted (a document, a dataset, an account).
 */
export class PostingsWithoutForeignKey1732000000019 implements MigrationInterface {
  name = 'PostingsWithoutForeignKey1732000000019';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`ALTER TABLE chunk_terms DROP CONSTRAINT chunk_terms_chunk_seq_fkey`);
    await db.query(`
      CREATE FUNCTION delete_chunk_postings() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        -- Planned at each call: a plan kept from when chunk_terms was small would scan all of it.
        EXECUTE 'DELETE FROM chunk_terms p USING gone g WHERE p.chunk_seq = g.seq';
        RETURN NULL;
      END $$`);
    await db.query(`
      CREATE TRIGGER chunks_delete_postings AFTER DELETE ON chunks
        REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION delete_chunk_postings()`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TRIGGER chunks_delete_postings ON chunks`);
    await db.query(`DROP FUNCTION delete_chunk_postings()`);
    await db.query(
      `DELETE FROM chunk_terms p WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.seq = p.chunk_seq)`,
    );
    await db.query(`
      ALTER TABLE chunk_terms ADD CONSTRAINT chunk_terms_chunk_seq_fkey
        FOREIGN KEY (chunk_seq) REFERENCES chunks (seq) ON DELETE CASCADE`);
  }
}
