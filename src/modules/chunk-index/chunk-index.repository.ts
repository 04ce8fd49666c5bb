import { setImmediate } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { toSql } from 'pgvector';
import { DataSource } from 'typeorm';
import { newId } from 'src/common/ids/ids.js';
import type { Tx } from 'src/database/transaction.js';
import type { VectorModel } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import type { IndexState } from 'src/modules/chunk-index/index-state.repository.js';
import { changedLexemeSource, lexemeSource } from 'src/modules/chunk-index/lexeme-source.js';

/** A chunk as the index stores it: its text and where it stands in its document. */
export interface IndexedChunk {
  content: string;
  tokenCount: number;
  page?: number | null;
  charStart: number;
  charEnd: number;
  /** Indexed for the keyword leg with the content, not part of it (`indexContext`). */
  context?: string | null;
}

/** The dataset a document's chunks are written into. */
export interface IndexTarget {
  datasetId: string;
  datasetSeq: string;
  /** The dataset's text search configuration. */
  language: string;
  documentId: string;
}

/** What a document's chunks counted for in their dataset's BM25 statistics. */
export interface ChunkTotals {
  chunks: number;
  length: number;
}

/**
 * Chunks whose lexeme source is computed in one turn of the event loop, so that text far from ASCII,
 * the costliest (docs/search.md, Unicode forms), holds other requests only briefly.
 */
const LEXEME_SLICE = 500;

/**
 * Chunks written a statement: a statement's parameters are serialised on the main thread at once, so a
 * document of hundreds of thousands of small chunks is written in parts (docs/ingestion.md). Vectors
 * cost the most to serialise: a batch carries at most `INSERT_BATCH_VECTOR_VALUES` of their numbers.
 */
const INSERT_BATCH = 5_000;
const INSERT_BATCH_VECTOR_VALUES = 400_000;

/**
 * A batch of a document's chunks with their postings and the terms' document frequencies, in one
 * statement. The dataset's text search configuration turns each chunk into lexemes (stemmed, stop
 * words dropped); a lexeme's tf is its number of positions, and a chunk's BM25 length the sum of its
 * tfs. Parameters: document id, dataset seq, then one array per chunk column, then the configuration,
 * then the text each chunk's lexemes are taken from (`lexemeSources`), null where it is the content,
 * then whether the vectors are of the dataset's next generation (`next_embedding`) rather than its own.
 */
const INSERT_CHUNKS = `WITH input AS (
     SELECT * FROM unnest($3::text[], $4::int[], $5::text[], $6::int[], $7::int[], $8::int[], $9::int[], $10::text[],
                          $12::text[])
              AS t(id, ordinal, content, token_count, page, char_start, char_end, embedding, source)
   ), analysed AS (
     SELECT input.*, to_tsvector($11::regconfig, coalesce(input.source, input.content)) AS lexemes FROM input
   ), inserted AS (
     INSERT INTO chunks (id, document_id, dataset_seq, ordinal, content, token_count, page, char_start, char_end,
                         length, embedding, next_embedding)
     SELECT a.id, $1, $2, a.ordinal, a.content, a.token_count, a.page, a.char_start, a.char_end,
            coalesce((SELECT sum(coalesce(array_length(l.positions, 1), 1)) FROM unnest(a.lexemes) l), 0),
            CASE WHEN NOT $13 THEN a.embedding::vector END, CASE WHEN $13 THEN a.embedding::vector END
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

/**
 * The search index's writes: chunks with their vectors, BM25 postings (`chunk_terms`), the terms'
 * document frequencies (`term_stats`) and the dataset's totals (`dataset_index`), always changed together in the
 * caller's transaction, under the dataset's chunk lock (`lockDataset`), so that the statistics stay
 * exact. Nothing else writes these tables but `ChunkVectorsRepository`, which writes only the vectors of
 * chunks indexed earlier, under the same lock.
 */
@Injectable()
export class ChunkIndexRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * The lock of a dataset's chunks, taken first, before any row lock, by every transaction that writes
   * a dataset's chunks or BM25 statistics, or decides what they hold: indexing, deleting or reprocessing
   * a document, deleting the dataset, and re-embedding (its start, its end, and each page of vectors it
   * writes). It keeps the statistics exact and these writers in one order. It is a lock of its own (a
   * transaction-level advisory lock on the dataset's id), not the dataset row's: indexing a large
   * document writes for seconds, and a writer of the row alone (an upload counting its document, a
   * change of name) must not wait for that. Such a writer takes the row `FOR NO KEY UPDATE`, which the
   * key-share locks of the chunks' foreign keys do not hold up; indexing updates the row only at its end.
   */
  async lockDataset(tx: Tx, datasetId: string): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('dataset chunks ' || $1, 0))`, [datasetId]);
  }

  /**
   * Writes a document's chunks, their vectors (when given, one per chunk, of `embeddings.model`) and
   * postings in place of those of an earlier run, and adjusts the dataset's statistics by the
   * difference. A dataset searches the vectors of one model: the vectors are written when they are of
   * the dataset's model, or when it has none yet and none is being built (the model becomes its own);
   * when they are of the generation being built beside them (a re-embedding), they are written there,
   * and the chunks join the vector leg at the switch; otherwise the chunks are indexed keyword-only
   * (a re-embedding embeds them). Returns the model of the vectors written, or null. The caller holds
   * the dataset's chunk lock.
   */
  async replaceDocumentChunks(
    tx: Tx,
    target: IndexTarget,
    chunks: IndexedChunk[],
    embeddings: (VectorModel & { vectors: number[][] }) | null,
  ): Promise<string | null> {
    const [state] = await tx.query<VectorState[]>(
      `SELECT embedding_model AS "embeddingModel", embedding_dimensions AS "embeddingDimensions",
              next_embedding_model AS "nextEmbeddingModel", next_embedding_dimensions AS "nextEmbeddingDimensions"
         FROM dataset_index WHERE dataset_id = $1`,
      [target.datasetId],
    );
    const generation = embeddings && state ? generationOf(state, embeddings) : null;
    const previous = await this.deleteDocumentChunks(tx, target.documentId);
    const vectors =
      embeddings && generation ? { values: embeddings.vectors, next: generation === 'next' } : null;
    const length = await this.insertChunks(tx, target, chunks, vectors);
    if (embeddings && generation === 'current' && state.embeddingModel === null) {
      await tx.query(
        `UPDATE dataset_index SET embedding_model = $2, embedding_dimensions = $3 WHERE dataset_id = $1`,
        [target.datasetId, embeddings.name, embeddings.dimensions],
      );
    }
    await this.adjustTotals(tx, target.datasetId, chunks.length - previous.chunks, length - previous.length);
    return embeddings && generation ? embeddings.name : null;
  }

  /**
   * Removes a document's chunks, their postings and their share of the dataset's statistics, and
   * returns what they counted for. The caller holds the dataset's chunk lock.
   */
  async removeDocumentChunks(tx: Tx, datasetId: string, documentId: string): Promise<ChunkTotals> {
    const removed = await this.deleteDocumentChunks(tx, documentId);
    await this.adjustTotals(tx, datasetId, -removed.chunks, -removed.length);
    return removed;
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

  /**
   * Deletes a document's chunks (their postings cascade) and returns how many there were and their
   * length. The terms of the postings that go lose their share of the document frequencies first and
   * get a new version; a term left in no chunk loses its row (see the term_stats migration: versions
   * come from a sequence, so the term coming back later never repeats a version a search process
   * trusts).
   */
  private async deleteDocumentChunks(tx: Tx, documentId: string): Promise<ChunkTotals> {
    // The DELETE and the UPDATE see the same snapshot and touch disjoint rows. A df below the postings
    // removed (counts gone wrong) is not deleted: the UPDATE takes it below 0, which the CHECK refuses.
    await tx.query(
      `WITH gone AS (
         SELECT p.dataset_seq, p.term, count(*)::int AS n
           FROM chunks c JOIN chunk_terms p ON p.chunk_seq = c.seq
          WHERE c.document_id = $1
          GROUP BY p.dataset_seq, p.term
       ), emptied AS (
         DELETE FROM term_stats t USING gone g
          WHERE t.dataset_seq = g.dataset_seq AND t.term = g.term AND t.df = g.n
       )
       UPDATE term_stats t SET df = t.df - g.n, version = nextval('term_stats_version')
         FROM gone g
        WHERE t.dataset_seq = g.dataset_seq AND t.term = g.term AND t.df <> g.n`,
      [documentId],
    );
    const [removed] = await tx.query<ChunkTotals[]>(
      `WITH gone AS (DELETE FROM chunks WHERE document_id = $1 RETURNING length)
       SELECT count(*)::int AS chunks, coalesce(sum(length), 0)::float8 AS length FROM gone`,
      [documentId],
    );
    return removed;
  }

  /** BM25's N and total chunk length, in the dataset's index state. */
  private async adjustTotals(tx: Tx, datasetId: string, chunks: number, totalLength: number): Promise<void> {
    if (chunks === 0 && totalLength === 0) return;
    await tx.query(
      `UPDATE dataset_index SET chunk_count = chunk_count + $2, total_chunk_length = total_chunk_length + $3
        WHERE dataset_id = $1`,
      [datasetId, chunks, totalLength],
    );
  }

  /**
   * Inserts the chunks, their postings and the terms' document frequencies (`INSERT_CHUNKS`), a batch
   * of chunks a statement (see `INSERT_BATCH`). Returns the total length added.
   */
  private async insertChunks(
    tx: Tx,
    { documentId, datasetSeq, language }: IndexTarget,
    chunks: IndexedChunk[],
    vectors: { values: number[][]; next: boolean } | null,
  ): Promise<number> {
    const dimensions = vectors?.values[0]?.length ?? 0;
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
        part.map((_, i) => (vectors ? (toSql(vectors.values[first + i]) as string) : null)),
        language,
        sources,
        vectors?.next ?? false,
      ]);
      total += result.total;
    }
    return total;
  }
}

type VectorState = Pick<
  IndexState,
  'embeddingModel' | 'embeddingDimensions' | 'nextEmbeddingModel' | 'nextEmbeddingDimensions'
>;

/**
 * Which of a dataset's generations, in `state`, takes vectors of `model` (`replaceDocumentChunks`):
 * the searched one (`current`), the one being built (`next`), or neither (null).
 */
function generationOf(state: VectorState, model: VectorModel): 'current' | 'next' | null {
  const building = state.nextEmbeddingModel !== null;
  if (
    building &&
    state.nextEmbeddingModel === model.name &&
    state.nextEmbeddingDimensions === model.dimensions
  )
    return 'next';
  if (state.embeddingModel === null) return building ? null : 'current';
  return state.embeddingModel === model.name && state.embeddingDimensions === model.dimensions
    ? 'current'
    : null;
}

/**
 * The text each chunk's lexemes are taken from, where it is not the content: its context and content
 * (`IndexedChunk.context`), else its content's `changedLexemeSource`. A slice of chunks a turn of the
 * event loop.
 */
async function lexemeSources(chunks: IndexedChunk[]): Promise<(string | null)[]> {
  const sources: (string | null)[] = [];
  for (let first = 0; first < chunks.length; first += LEXEME_SLICE) {
    if (first > 0) await setImmediate();
    for (const { content, context } of chunks.slice(first, first + LEXEME_SLICE))
      sources.push(context ? lexemeSource(`${context}\n\n${content}`) : changedLexemeSource(content));
  }
  return sources;
}
