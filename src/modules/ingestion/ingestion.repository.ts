import { setImmediate } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { toSql } from 'pgvector';
import { DataSource } from 'typeorm';
import type { ProcessingErrorPayload } from 'src/common/events/domain-events.js';
import { newId } from 'src/common/ids/ids.js';
import type { Tx } from 'src/database/transaction.js';
import {
  adjustChunkStats,
  lockDatasetChunks,
  removeDocumentChunks,
} from 'src/modules/datasets/chunk-statistics.js';
import type { DocumentEntity, ProcessingStage } from 'src/modules/documents/document.entity.js';
import type { Chunk } from 'src/modules/embeddings/chunking/chunker.js';
import { changedLexemeSource } from 'src/modules/search/lexeme-source.js';

/**
 * Chunks whose lexeme source is computed in one turn of the event loop: text far from ASCII costs up
 * to about 16 µs a 1,300-character chunk (Arabic presentation forms; Japanese 10 µs, English 0.6 µs),
 * so a batch of 5,000 such chunks in one turn would hold every other request for 80 ms.
 */
const LEXEME_SLICE = 500;

/** Each chunk's `changedLexemeSource`, a slice of chunks a turn of the event loop. */
async function lexemeSources(chunks: Chunk[]): Promise<(string | null)[]> {
  const sources: (string | null)[] = [];
  for (let first = 0; first < chunks.length; first += LEXEME_SLICE) {
    if (first > 0) await setImmediate();
    for (const { content } of chunks.slice(first, first + LEXEME_SLICE))
      sources.push(changedLexemeSource(content));
  }
  return sources;
}

/** Identifies one run of the pipeline for one document. */
export interface Run {
  documentId: string;
  generation: number;
}

export interface StaleRun {
  id: string;
  datasetId: string;
  generation: number;
  recoveries: number;
}

const STILL_RUNNING = `id = $1 AND generation = $2 AND status = 'processing'`;

/**
 * A run's end, set as the document leaves `processing` (with `FROM ${RUN_ENDED}`): `processed_at` is
 * the clock as the statement runs, not the transaction's start (a large document's chunks take seconds
 * to index before it), and `processing_time_ms` runs from the run's start to it, queue wait included
 * (docs/decisions.md), both on the database's clock. The time is held within an integer's range: a
 * document left processing for 25 days (no worker running) must still be able to fail.
 */
const PROCESSING_TIME = `processed_at = ended.at,
  processing_time_ms = least(greatest(round(extract(epoch FROM ended.at - processing_started_at) * 1000), 0), 2147483647)::int`;
const RUN_ENDED = `(SELECT clock_timestamp() AS at) ended`;

/**
 * Chunks written a statement: a statement's parameters are serialised on the main thread at once. A
 * document of 430,000 small chunks (a 9.5 MB Markdown file of short sections) held every other request
 * for 1.3 s when written in one. Vectors cost the most to serialise (about 50 µs for 384 dimensions,
 * 180 µs for 1,536), so a batch carries at most `INSERT_BATCH_VECTOR_VALUES` of their numbers: 1,041
 * chunks of 384 dimensions, 260 of 1,536, about 50 ms of serialising either way.
 */
const INSERT_BATCH = 5_000;
const INSERT_BATCH_VECTOR_VALUES = 400_000;

/**
 * A batch of a document's chunks with their postings and the terms' document frequencies, in one
 * statement. The dataset's text search configuration turns each chunk into lexemes (stemmed, stop
 * words dropped); a lexeme's tf is its number of positions, and a chunk's BM25 length the sum of its
 * tfs. Parameters: document id, dataset seq, then one array per chunk column, then the configuration,
 * then the text each chunk's lexemes are taken from (`changedLexemeSource`), null where it is the content.
 */
const INSERT_CHUNKS = `WITH input AS (
     SELECT * FROM unnest($3::text[], $4::int[], $5::text[], $6::int[], $7::int[], $8::int[], $9::int[], $10::text[],
                          $12::text[])
              AS t(id, ordinal, content, token_count, page, char_start, char_end, embedding, source)
   ), analysed AS (
     SELECT input.*, to_tsvector($11::regconfig, coalesce(input.source, input.content)) AS lexemes FROM input
   ), inserted AS (
     INSERT INTO chunks (id, document_id, dataset_seq, ordinal, content, token_count, page, char_start, char_end,
                         length, embedding)
     SELECT a.id, $1, $2, a.ordinal, a.content, a.token_count, a.page, a.char_start, a.char_end,
            coalesce((SELECT sum(coalesce(array_length(l.positions, 1), 1)) FROM unnest(a.lexemes) l), 0),
            a.embedding::vector
       FROM analysed a
     RETURNING seq, id, length
   ), postings AS (
     INSERT INTO chunk_terms (dataset_seq, term, chunk_seq, tf, length)
     SELECT $2, l.lexeme, i.seq, coalesce(array_length(l.positions, 1), 1), i.length
       FROM inserted i JOIN analysed a ON a.id = i.id, unnest(a.lexemes) l
   ), term_counts AS (
     INSERT INTO term_stats AS t (dataset_seq, term, df)
     SELECT $2, l.lexeme, count(*) FROM analysed a, unnest(a.lexemes) l GROUP BY l.lexeme
     ON CONFLICT (dataset_seq, term)
     DO UPDATE SET df = t.df + excluded.df, version = nextval('term_stats_version')
   )
   SELECT coalesce(sum(length), 0)::float8 AS total FROM inserted`;

@Injectable()
export class IngestionRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * The document and its content, if this run is still the current one and still processing (null when
   * it is gone, with its dataset or alone). A document is deleted with its dataset, and one statement
   * sees both or neither; a deletion after it is caught by `index`, which then writes nothing.
   */
  async loadRun(run: Run): Promise<{ document: DocumentEntity; content: Buffer } | null> {
    const [row] = await this.db.query<(DocumentEntity & { content: Buffer })[]>(
      `SELECT d.id, d.dataset_id AS "datasetId", d.kind, d.filename, s.content
         FROM documents d JOIN document_sources s ON s.document_id = d.id
        WHERE d.id = $1 AND d.generation = $2 AND d.status = 'processing'`,
      [run.documentId, run.generation],
    );
    if (!row) return null;
    const { content, ...document } = row;
    return { document, content };
  }

  /** Records the stage a run is in; also its heartbeat, which tells the recovery sweep it is alive. */
  async setProgress(run: Run, stage: ProcessingStage, percent: number): Promise<void> {
    await this.db.query(`UPDATE documents SET progress = $3, heartbeat_at = now() WHERE ${STILL_RUNNING}`, [
      run.documentId,
      run.generation,
      { stage, percent: Math.round(percent) },
    ]);
  }

  /**
   * Writes a run's chunks, vectors and BM25 postings and marks the document ready, in one transaction.
   * The dataset's chunk lock is taken first (`lockDatasetChunks`: the order every writer of a dataset's
   * chunks follows, so they cannot deadlock), then the document's row: if it was deleted or restarted
   * meanwhile, nothing is written. The dataset row itself is written last, so that uploads into the
   * dataset do not wait for the chunks.
   * Chunks of an earlier run are replaced, and the dataset's BM25 statistics adjusted by the difference.
   * Returns the run's processing time (see `PROCESSING_TIME`), or null when the run was no longer
   * current.
   */
  async index(
    run: Run,
    datasetId: string,
    chunks: Chunk[],
    embeddings: { model: string; dimensions: number; vectors: number[][] } | null,
  ): Promise<number | null> {
    return this.db.transaction('READ COMMITTED', async (tx) => {
      // A large document's statements are costly enough in the planner's eyes for JIT compilation,
      // which they never repay: 0.23 s compiling the insert of 23,738 chunks, 4.3 s with it against 4.0.
      await tx.query('SET LOCAL jit = off');
      await lockDatasetChunks(tx, datasetId);
      const [dataset] = await tx.query<
        {
          seq: string;
          language: string;
          embedding_model: string | null;
          embedding_dimensions: number | null;
          reembedding: boolean;
        }[]
      >(
        `SELECT seq, language::text AS language, embedding_model, embedding_dimensions, reembedding
           FROM datasets WHERE id = $1`,
        [datasetId],
      );
      if (!dataset) return null;
      const [current] = await tx.query<unknown[]>(
        `SELECT 1 FROM documents WHERE ${STILL_RUNNING} FOR UPDATE`,
        [run.documentId, run.generation],
      );
      if (!current) return null;

      const previous = await removeDocumentChunks(tx, run.documentId);
      const vectors = embeddings && this.acceptsEmbeddings(dataset, embeddings) ? embeddings.vectors : null;
      const totalLength = await this.insertChunks(
        tx,
        run.documentId,
        dataset.seq,
        dataset.language,
        chunks,
        vectors,
      );
      if (vectors && embeddings && dataset.embedding_model === null) {
        await tx.query(`UPDATE datasets SET embedding_model = $2, embedding_dimensions = $3 WHERE id = $1`, [
          datasetId,
          embeddings.model,
          embeddings.dimensions,
        ]);
      }
      await adjustChunkStats(tx, datasetId, chunks.length - previous.chunks, totalLength - previous.length);
      const [ready] = await tx.query<{ processing_time_ms: number }[]>(
        `UPDATE documents
            SET status = 'ready', chunks_created = $3, ${PROCESSING_TIME}, progress = NULL, error = NULL
           FROM ${RUN_ENDED}
          WHERE ${STILL_RUNNING}
          RETURNING processing_time_ms`,
        [run.documentId, run.generation, chunks.length],
      );
      return ready.processing_time_ms;
    });
  }

  /**
   * A dataset keeps the vectors of one model: a document embedded by another, or indexed while the
   * dataset is being re-embedded (the command embeds it at the end), is indexed keyword-only.
   */
  private acceptsEmbeddings(
    dataset: { embedding_model: string | null; embedding_dimensions: number | null; reembedding: boolean },
    embeddings: { model: string; dimensions: number },
  ): boolean {
    if (dataset.reembedding) return false;
    if (dataset.embedding_model === null) return true;
    return (
      dataset.embedding_model === embeddings.model && dataset.embedding_dimensions === embeddings.dimensions
    );
  }

  /**
   * Inserts the chunks, their postings and the terms' document frequencies (`INSERT_CHUNKS`), a batch
   * of chunks a statement (see `INSERT_BATCH`), in the caller's transaction. Returns the total length
   * added.
   */
  private async insertChunks(
    tx: Tx,
    documentId: string,
    datasetSeq: string,
    language: string,
    chunks: Chunk[],
    vectors: number[][] | null,
  ): Promise<number> {
    const dimensions = vectors?.[0]?.length ?? 0;
    const batch = dimensions
      ? Math.max(1, Math.min(INSERT_BATCH, Math.floor(INSERT_BATCH_VECTOR_VALUES / dimensions)))
      : INSERT_BATCH;
    let total = 0;
    for (let first = 0; first < chunks.length; first += batch) {
      const part = chunks.slice(first, first + batch);
      const sources = await lexemeSources(part);
      const [result] = await tx.query<{ total: number }[]>(INSERT_CHUNKS, [
        documentId,
        datasetSeq,
        part.map(() => newId('chk')),
        part.map((_, i) => first + i),
        part.map((c) => c.content),
        part.map((c) => c.tokenCount),
        part.map((c) => c.page ?? null),
        part.map((c) => c.charStart),
        part.map((c) => c.charEnd),
        part.map((_, i) => (vectors ? (toSql(vectors[first + i]) as string) : null)),
        language,
        sources,
      ]);
      total += result.total;
    }
    return total;
  }

  /** Marks a run failed with a code; returns its dataset id, or null when the run was no longer current. */
  async fail(run: Run, error: ProcessingErrorPayload): Promise<string | null> {
    const [rows] = await this.db.query<[{ dataset_id: string }[], number]>(
      `UPDATE documents
          SET status = 'failed', error = $3, ${PROCESSING_TIME}, progress = NULL
         FROM ${RUN_ENDED}
        WHERE ${STILL_RUNNING}
        RETURNING dataset_id`,
      [run.documentId, run.generation, error],
    );
    return rows[0]?.dataset_id ?? null;
  }

  /**
   * Each embedding dimension in use gets a partial HNSW index over the cast `embedding::halfvec(dims)`
   * (the column itself has no fixed dimension; half precision halves the index and takes up to 4,000
   * dimensions). 384 is created by the migrations; others at start-up.
   */
  async ensureVectorIndex(dimensions: number): Promise<void> {
    if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 4000) return;
    await this.db.query(
      `CREATE INDEX IF NOT EXISTS chunks_embedding_${dimensions}_idx ON chunks
         USING hnsw ((embedding::halfvec(${dimensions})) halfvec_cosine_ops)
         WHERE vector_dims(embedding) = ${dimensions}`,
    );
  }

  /** Processing documents whose run has not reported for `seconds`. */
  staleRuns(seconds: number, limit: number): Promise<StaleRun[]> {
    return this.db.query<StaleRun[]>(
      `SELECT id, dataset_id AS "datasetId", generation, recoveries
         FROM documents
        WHERE status = 'processing' AND heartbeat_at < now() - make_interval(secs => $1)
        ORDER BY heartbeat_at
        LIMIT $2`,
      [seconds, limit],
    );
  }

  /** Counts a restart of a run whose worker died; false if the run moved on meanwhile. */
  async recordRecovery(run: Run, recoveries: number): Promise<boolean> {
    const [, affected] = await this.db.query<[unknown, number]>(
      `UPDATE documents SET recoveries = $3 + 1, heartbeat_at = now()
        WHERE ${STILL_RUNNING} AND recoveries = $3`,
      [run.documentId, run.generation, recoveries],
    );
    return affected > 0;
  }
}
