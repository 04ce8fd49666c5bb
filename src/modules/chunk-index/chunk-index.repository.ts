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

/** The dataset chunks are written into. */
export interface DatasetTarget {
  datasetId: string;
  datasetSeq: string;
  /** The dataset's text search configuration. */
  language: string;
}

/** The dataset a document's chunks are written into. */
export interface IndexTarget extends DatasetTarget {
  documentId: string;
}

/** A document's chunks with their vectors (when given, one per chunk, of `embeddings.name`). */
export interface DocumentChunks {
  documentId: string;
  chunks: IndexedChunk[];
  embeddings: (VectorModel & { vectors: number[][] }) | null;
  /** The ordinal of the first chunk given: a document written in parts (`appendChunks`) starts past 0. */
  firstOrdinal?: number;
  /**
   * The document is known to have no chunks (its row counts none), so `replaceChunks` has none to
   * remove: a new document's run skips the removal's statements, whose plans over a
   * dataset the planner's statistics have not seen yet walk all its postings (docs/citus.md).
   */
  unindexed?: boolean;
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
 * A batch of chunks, of one document or several, with their postings, in one statement; it answers
 * the length added (a row without a term) and each term's number of chunks (`ADD_TERMS` adds them). The dataset's text search configuration turns each chunk into
 * lexemes (stemmed, stop words dropped); a lexeme's tf is its number of positions, and a chunk's BM25
 * length the sum of its tfs. Parameters: dataset seq, then one array per chunk column (its document,
 * id, ordinal, content, token count, page, offsets, vector, the text its lexemes are taken from
 * (`lexemeSources`; null where it is the content), and whether its vector is of the dataset's next
 * generation (`next_embedding`) rather than its own), then the configuration.
 */
const INSERT_CHUNKS = `WITH input AS (
     SELECT * FROM unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::int[], $7::int[], $8::int[], $9::int[],
                          $10::text[], $11::text[], $12::bool[])
              AS t(document_id, id, ordinal, content, token_count, page, char_start, char_end, embedding, source, next)
   ), analysed AS (
     SELECT input.*, to_tsvector($13::regconfig, coalesce(input.source, input.content)) AS lexemes FROM input
   ), inserted AS (
     INSERT INTO chunks (id, document_id, dataset_seq, ordinal, content, token_count, page, char_start, char_end,
                         length, embedding, next_embedding)
     SELECT a.id, a.document_id, $1, a.ordinal, a.content, a.token_count, a.page, a.char_start, a.char_end,
            coalesce((SELECT sum(coalesce(array_length(l.positions, 1), 1)) FROM unnest(a.lexemes) l), 0),
            CASE WHEN NOT a.next THEN a.embedding::vector END, CASE WHEN a.next THEN a.embedding::vector END
       FROM analysed a
     RETURNING seq, id, length
   ), postings AS (
     INSERT INTO chunk_terms (dataset_seq, term, chunk_seq, tf, length)
     SELECT $1, l.lexeme, i.seq, coalesce(array_length(l.positions, 1), 1), i.length
       FROM inserted i JOIN analysed a ON a.id = i.id, unnest(a.lexemes) l
   )
   SELECT NULL AS term, NULL::int AS df, (SELECT coalesce(sum(length), 0)::float8 FROM inserted) AS total
   UNION ALL
   SELECT l.lexeme, count(*)::int, NULL FROM analysed a, unnest(a.lexemes) l GROUP BY l.lexeme`;

/**
 * Adds chunks' terms to their document frequencies, in term order: writers that hold the dataset's
 * chunk lock shared (`lockDataset`) lock the rows of the terms they share in the same order, and so
 * wait for one another's commit but never deadlock. Parameters: dataset seq, terms, their counts, and
 * the terms' new version (`newVersion`).
 */
const ADD_TERMS = `INSERT INTO term_stats AS t (dataset_seq, term, df, version)
   SELECT $1, u.term, u.df, $4 FROM unnest($2::text[], $3::int[]) AS u(term, df) ORDER BY u.term
   ON CONFLICT (dataset_seq, term)
   DO UPDATE SET df = t.df + excluded.df, version = excluded.version`;

/**
 * A version for the terms a statement changes, drawn before it: Citus refuses volatile functions in
 * the UPDATE of a distributed table. The terms of one statement share it, and no value is drawn
 * twice; drawn before the rows are locked, versions need not rise in the order writers commit, and
 * searches compare them for equality only (PostingsCache).
 */
async function newVersion(tx: Tx): Promise<string> {
  const [{ version }] = await tx.query<{ version: string }[]>(
    `SELECT nextval('term_stats_version')::text AS version`,
  );
  return version;
}

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
   *
   * Indexing takes it `shared`, so that several runs of a dataset are written at once: what they change
   * in common are additions (terms' document frequencies, the dataset's totals), made row by row in one
   * order (`ADD_TERMS`, then the totals), which commute and stay exact at every commit. Everything else
   * takes it exclusive, and so waits for the indexing under way and holds new indexing back: the first
   * vectors of a dataset, which decide its model, are written under the exclusive lock too.
   */
  async lockDataset(tx: Tx, datasetId: string, { shared = false } = {}): Promise<void> {
    await tx.query(
      `SELECT ${shared ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock'}(hashtextextended('dataset chunks ' || $1, 0))`,
      [datasetId],
    );
  }

  /** `replaceChunks` for one document; the model of its vectors written, or null. */
  async replaceDocumentChunks(
    tx: Tx,
    target: IndexTarget,
    chunks: IndexedChunk[],
    embeddings: (VectorModel & { vectors: number[][] }) | null,
  ): Promise<string | null> {
    const [model] = await this.replaceChunks(tx, target, [
      { documentId: target.documentId, chunks, embeddings },
    ]);
    return model;
  }

  /**
   * Writes documents' chunks, their vectors and postings in place of those of earlier runs, and
   * adjusts the dataset's statistics by the difference, all documents together: a statement for the
   * old chunks, as few as `INSERT_BATCH` allows for the new, one update of the totals. A dataset
   * searches the vectors of one model: vectors are written when they are of the dataset's model, or
   * when it has none yet and none is being built (the first document's model becomes its own); when
   * they are of the generation being built beside them (a re-embedding), they are written there, and
   * the chunks join the vector leg at the switch; otherwise the chunks are indexed keyword-only (a
   * re-embedding embeds them). Returns, for each document, the model of the vectors written, or null.
   * The caller holds the dataset's chunk lock, exclusive unless `shared` (see `lockDataset`): under the
   * shared lock, vectors that would make their model the dataset's throw `ExclusiveLockNeeded` before
   * anything is written.
   */
  replaceChunks(
    tx: Tx,
    dataset: DatasetTarget,
    documents: DocumentChunks[],
    { shared = false } = {},
  ): Promise<(string | null)[]> {
    return this.writeChunks(tx, dataset, documents, { shared, replace: true });
  }

  /**
   * `replaceChunks` without removing anything first: adds chunks to documents that have none from
   * `firstOrdinal` on, so that a large document can be written in parts (an imported dataset, read as
   * it arrives). The same statements, statistics and model rules; the caller holds the exclusive lock.
   */
  appendChunks(tx: Tx, dataset: DatasetTarget, documents: DocumentChunks[]): Promise<(string | null)[]> {
    return this.writeChunks(tx, dataset, documents, { shared: false, replace: false });
  }

  private async writeChunks(
    tx: Tx,
    dataset: DatasetTarget,
    documents: DocumentChunks[],
    { shared, replace }: { shared: boolean; replace: boolean },
  ): Promise<(string | null)[]> {
    const [state] = await tx.query<VectorState[]>(
      `SELECT embedding_model AS "embeddingModel", embedding_dimensions AS "embeddingDimensions",
              next_embedding_model AS "nextEmbeddingModel", next_embedding_dimensions AS "nextEmbeddingDimensions"
         FROM dataset_index WHERE dataset_seq = $1`,
      [dataset.datasetSeq],
    );
    const adopted = state?.embeddingModel ?? null;
    const generations = documents.map(({ embeddings }) => {
      const generation = embeddings && state ? generationOf(state, embeddings) : null;
      // The first vectors of a dataset without a model make the model its own, for the rest too.
      if (embeddings && generation === 'current' && state.embeddingModel === null) {
        if (shared) throw new ExclusiveLockNeeded();
        Object.assign(state, { embeddingModel: embeddings.name, embeddingDimensions: embeddings.dimensions });
      }
      return generation;
    });
    const indexed = replace ? documents.filter((document) => !document.unindexed) : [];
    const previous =
      indexed.length > 0
        ? await this.deleteDocumentChunks(
            tx,
            dataset.datasetSeq,
            indexed.map((document) => document.documentId),
          )
        : { chunks: 0, length: 0 };
    const length = await this.insertChunks(tx, dataset, documents, generations);
    if (state && adopted === null && state.embeddingModel !== null) {
      await tx.query(
        `UPDATE dataset_index SET embedding_model = $2, embedding_dimensions = $3 WHERE dataset_seq = $1`,
        [dataset.datasetSeq, state.embeddingModel, state.embeddingDimensions],
      );
    }
    const chunks = documents.reduce((sum, document) => sum + document.chunks.length, 0);
    await this.adjustTotals(tx, dataset.datasetSeq, {
      chunks: chunks - previous.chunks,
      length: length - previous.length,
      removed: previous.chunks,
    });
    return documents.map(({ embeddings }, i) => (embeddings && generations[i] ? embeddings.name : null));
  }

  /**
   * Removes a document's chunks, their postings and their share of the dataset's statistics, and
   * returns what they counted for. The caller holds the dataset's chunk lock.
   */
  async removeDocumentChunks(tx: Tx, datasetSeq: string, documentId: string): Promise<ChunkTotals> {
    const removed = await this.deleteDocumentChunks(tx, datasetSeq, [documentId]);
    await this.adjustTotals(tx, datasetSeq, {
      chunks: -removed.chunks,
      length: -removed.length,
      removed: removed.chunks,
    });
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
   * Deletes documents' chunks and their postings, and returns how many there were and their length.
   * Every statement names the dataset, so that on Citus it runs in the dataset's shard. The terms of
   * the postings that go lose their share of the document frequencies first and get a new version; a
   * term left in no chunk loses its row (see the term_stats migration: versions come from a sequence,
   * so the term coming back later never repeats a version a search process trusts).
   */
  private async deleteDocumentChunks(
    tx: Tx,
    datasetSeq: string,
    documentIds: string[],
  ): Promise<ChunkTotals> {
    // The terms' rows are locked first, in term order, as indexing under the shared lock adds to them.
    await tx.query(
      `SELECT 1 FROM term_stats t
         JOIN (SELECT DISTINCT p.dataset_seq, p.term
                 FROM chunks c JOIN chunk_terms p ON p.dataset_seq = c.dataset_seq AND p.chunk_seq = c.seq
                WHERE c.dataset_seq = $2 AND c.document_id = ANY($1::text[])) g
           ON g.dataset_seq = t.dataset_seq AND g.term = t.term
        WHERE t.dataset_seq = $2
        ORDER BY t.term
          FOR UPDATE OF t`,
      [documentIds, datasetSeq],
    );
    // The DELETE and the UPDATE see the same snapshot and touch disjoint rows. A df below the postings
    // removed (counts gone wrong) is not deleted: the UPDATE takes it below 0, which the CHECK refuses.
    await tx.query(
      `WITH gone AS (
         SELECT p.dataset_seq, p.term, count(*)::int AS n
           FROM chunks c JOIN chunk_terms p ON p.dataset_seq = c.dataset_seq AND p.chunk_seq = c.seq
          WHERE c.dataset_seq = $2 AND c.document_id = ANY($1::text[])
          GROUP BY p.dataset_seq, p.term
       ), emptied AS (
         DELETE FROM term_stats t USING gone g
          WHERE t.dataset_seq = $2 AND t.dataset_seq = g.dataset_seq AND t.term = g.term AND t.df = g.n
       )
       UPDATE term_stats t SET df = t.df - g.n, version = $3
         FROM gone g
        WHERE t.dataset_seq = $2 AND t.dataset_seq = g.dataset_seq AND t.term = g.term AND t.df <> g.n`,
      [documentIds, datasetSeq, await newVersion(tx)],
    );
    await tx.query(
      `DELETE FROM chunk_terms p USING chunks c
        WHERE p.dataset_seq = $2 AND c.dataset_seq = $2 AND c.document_id = ANY($1::text[])
          AND p.chunk_seq = c.seq`,
      [documentIds, datasetSeq],
    );
    const [removed] = await tx.query<ChunkTotals[]>(
      `WITH gone AS (DELETE FROM chunks WHERE dataset_seq = $2 AND document_id = ANY($1::text[]) RETURNING length)
       SELECT count(*)::int AS chunks, coalesce(sum(length), 0)::float8 AS length FROM gone`,
      [documentIds, datasetSeq],
    );
    return removed;
  }

  /**
   * BM25's N and total chunk length, in the dataset's index state, and the count of chunks ever removed
   * from it, which tells a search whether its legs saw the same versions of the documents
   * (`SearchService`).
   */
  private async adjustTotals(
    tx: Tx,
    datasetSeq: string,
    change: { chunks: number; length: number; removed: number },
  ): Promise<void> {
    if (change.chunks === 0 && change.length === 0 && change.removed === 0) return;
    await tx.query(
      `UPDATE dataset_index SET chunk_count = chunk_count + $2, total_chunk_length = total_chunk_length + $3,
                                chunks_removed = chunks_removed + $4
        WHERE dataset_seq = $1`,
      [datasetSeq, change.chunks, change.length, change.removed],
    );
  }

  /**
   * Inserts the documents' chunks and their postings (`INSERT_CHUNKS`), a batch of chunks a statement
   * (see `INSERT_BATCH`), the vectors of each document into its generation (`replaceChunks`), then adds
   * their terms to the document frequencies in one statement (`ADD_TERMS`). Returns the total length
   * added.
   */
  private async insertChunks(
    tx: Tx,
    { datasetSeq, language }: DatasetTarget,
    documents: DocumentChunks[],
    generations: ('current' | 'next' | null)[],
  ): Promise<number> {
    const rows = documents.flatMap(({ documentId, chunks, embeddings, firstOrdinal = 0 }, d) =>
      chunks.map((chunk, ordinal) => ({
        documentId,
        chunk,
        ordinal: firstOrdinal + ordinal,
        vector: generations[d] ? embeddings!.vectors[ordinal] : null,
        next: generations[d] === 'next',
      })),
    );
    const dimensions = rows.reduce((most, row) => Math.max(most, row.vector?.length ?? 0), 0);
    const batch = dimensions
      ? Math.max(1, Math.min(INSERT_BATCH, Math.floor(INSERT_BATCH_VECTOR_VALUES / dimensions)))
      : INSERT_BATCH;
    let total = 0;
    const terms = new Map<string, number>();
    for (let first = 0; first < rows.length; first += batch) {
      const part = rows.slice(first, first + batch);
      const sources = await lexemeSources(part.map((row) => row.chunk));
      const counted = await tx.query<{ term: string | null; df: number | null; total: number | null }[]>(
        INSERT_CHUNKS,
        [
          datasetSeq,
          part.map((row) => row.documentId),
          part.map(() => newId('chk')),
          part.map((row) => row.ordinal),
          part.map((row) => row.chunk.content),
          part.map((row) => row.chunk.tokenCount),
          part.map((row) => row.chunk.page ?? null),
          part.map((row) => row.chunk.charStart),
          part.map((row) => row.chunk.charEnd),
          part.map((row) => (row.vector ? (toSql(row.vector) as string) : null)),
          sources,
          part.map((row) => row.next),
          language,
        ],
      );
      for (const { term, df, total: added } of counted) {
        if (term === null) total += added!;
        else terms.set(term, (terms.get(term) ?? 0) + df!);
      }
    }
    if (terms.size > 0) {
      await tx.query(ADD_TERMS, [datasetSeq, [...terms.keys()], [...terms.values()], await newVersion(tx)]);
    }
    return total;
  }
}

/**
 * Thrown under the shared chunk lock before anything is written, for what is written under the
 * exclusive one: vectors that would decide the dataset's model (`replaceChunks`), a run replacing a
 * version with chunks (`IngestionRepository`).
 */
export class ExclusiveLockNeeded extends Error {
  constructor() {
    super('written under the exclusive chunk lock: the first vectors of a dataset, or a version replaced');
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
