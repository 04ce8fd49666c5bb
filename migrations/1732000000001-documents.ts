import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Documents, their original bytes, their chunks, and what both legs of search read: a pgvector
 * embedding per chunk, and BM25 postings (term frequencies per chunk) with per-dataset statistics.
 */
export class Documents1732000000001 implements MigrationInterface {
  name = 'Documents1732000000001';

  async up(db: QueryRunner): Promise<void> {
    // `seq` is a compact internal key for the postings, which repeat it once per (term, chunk).
    // chunk_count and total_chunk_length are BM25's N and the sum behind avgdl, kept exact by the
    // transactions that add or remove chunks.
    await db.query(`
      ALTER TABLE datasets
        ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY,
        ADD COLUMN language regconfig NOT NULL DEFAULT 'english',
        ADD COLUMN embedding_model text,
        ADD COLUMN embedding_dimensions integer,
        ADD COLUMN chunk_count bigint NOT NULL DEFAULT 0,
        ADD COLUMN total_chunk_length bigint NOT NULL DEFAULT 0,
        ADD CONSTRAINT datasets_seq_key UNIQUE (seq)`);

    await db.query(`
      CREATE TABLE documents (
        id                     text PRIMARY KEY,
        dataset_id             text NOT NULL REFERENCES datasets (id) ON DELETE CASCADE,
        filename               text,
        kind                   text NOT NULL,
        media_type             text NOT NULL,
        size_bytes             integer NOT NULL,
        status                 text NOT NULL CHECK (status IN ('processing', 'ready', 'failed')),
        metadata               jsonb NOT NULL DEFAULT '{}'::jsonb,
        chunks_created         integer,
        error                  jsonb,
        progress               jsonb,
        generation             integer NOT NULL DEFAULT 1,
        recoveries             integer NOT NULL DEFAULT 0,
        processing_time_ms     integer,
        created_at             timestamptz NOT NULL DEFAULT now(),
        processing_started_at  timestamptz NOT NULL DEFAULT now(),
        heartbeat_at           timestamptz NOT NULL DEFAULT now(),
        processed_at           timestamptz,
        CONSTRAINT documents_metadata_is_object CHECK (jsonb_typeof(metadata) = 'object')
      )`);
    await db.query(`CREATE INDEX documents_dataset_created_idx ON documents (dataset_id, created_at, id)`);
    // The recovery sweep looks only at documents still processing.
    await db.query(
      `CREATE INDEX documents_processing_idx ON documents (heartbeat_at) WHERE status = 'processing'`,
    );
    await db.query(`CREATE INDEX documents_metadata_idx ON documents USING gin (metadata jsonb_path_ops)`);

    // The original bytes, kept so that a document can be processed again.
    await db.query(`
      CREATE TABLE document_sources (
        document_id  text PRIMARY KEY REFERENCES documents (id) ON DELETE CASCADE,
        content      bytea NOT NULL
      )`);

    // `embedding` has no fixed dimension so that datasets embedded with different models can coexist;
    // each dimension in use gets its own partial HNSW index over a cast expression (see below).
    await db.query(`
      CREATE TABLE chunks (
        seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id           text NOT NULL UNIQUE,
        document_id  text NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
        dataset_seq  bigint NOT NULL REFERENCES datasets (seq) ON DELETE CASCADE,
        ordinal      integer NOT NULL,
        content      text NOT NULL,
        token_count  integer NOT NULL,
        page         integer,
        char_start   integer NOT NULL,
        char_end     integer NOT NULL,
        length       integer NOT NULL,
        embedding    vector
      )`);
    await db.query(`CREATE INDEX chunks_document_idx ON chunks (document_id, ordinal)`);
    await db.query(`CREATE INDEX chunks_dataset_idx ON chunks (dataset_seq)`);
    // 384 dimensions: the default local model (bge-small-en-v1.5). Other dimensions get theirs at boot.
    await db.query(`
      CREATE INDEX chunks_embedding_384_idx ON chunks
        USING hnsw ((embedding::vector(384)) vector_cosine_ops)
        WHERE vector_dims(embedding) = 384`);

    // BM25 postings: one row per (dataset, term, chunk), carrying the term's frequency and the chunk's
    // length. The primary key is the covering index the keyword leg scans: all postings of a term in a
    // dataset, with everything BM25 needs, from the index alone (no visit to `chunks` while scoring);
    // its row count per term is the exact document frequency.
    await db.query(`
      CREATE TABLE chunk_terms (
        dataset_seq  bigint NOT NULL,
        term         text NOT NULL,
        chunk_seq    bigint NOT NULL REFERENCES chunks (seq) ON DELETE CASCADE,
        tf           integer NOT NULL,
        length       integer NOT NULL,
        PRIMARY KEY (dataset_seq, term, chunk_seq) INCLUDE (tf, length)
      )`);
    await db.query(`CREATE INDEX chunk_terms_chunk_idx ON chunk_terms (chunk_seq)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE chunk_terms`);
    await db.query(`DROP TABLE chunks`);
    await db.query(`DROP TABLE document_sources`);
    await db.query(`DROP TABLE documents`);
    await db.query(`
      ALTER TABLE datasets
        DROP COLUMN seq, DROP COLUMN language, DROP COLUMN embedding_model, DROP COLUMN embedding_dimensions,
        DROP COLUMN chunk_count, DROP COLUMN total_chunk_length`);
  }
}
