import { Injectable } from '@nestjs/common';
import type { Read } from 'src/database/read.js';

/** A chunk as a result shows it: its text, its place in its document and, once read, the document's. */
export interface ChunkRow {
  seq: string;
  id: string;
  content: string;
  documentId: string;
  /** The chunk's place in its document, 0 first. */
  ordinal: number;
  /** Page or slide (1-based) of formats that have them. */
  page: number | null;
  /** Offsets in the document's extracted text (UTF-16 code units, see `Chunk` in the chunker). */
  charStart: number;
  charEnd: number;
  /**
   * The document's metadata and file name, read together; left out of vector hits ranked below the
   * results shown (see `VectorLeg`).
   */
  metadata?: Record<string, unknown>;
  filename?: string | null;
}

/** How many searchable documents of a dataset pass a search's filters, and how many chunks they hold. */
export interface PassingDocuments {
  documents: number;
  chunks: number;
}

/**
 * A condition on the chunks' document, aliased `d` (a search's metadata filter), as SQL with its
 * parameters numbered from the one the statement gives it.
 */
export type DocumentCondition = (firstParam: number) => { sql: string; params: unknown[] };

const CHUNK_COLUMNS = `c.seq, c.id, c.content, c.document_id AS "documentId", c.ordinal, c.page,
  c.char_start AS "charStart", c.char_end AS "charEnd"`;
/** What a result shows of its chunk's document, read with the chunk (`ChunkRow.metadata`). */
const DOCUMENT_COLUMNS = `d.metadata, d.filename`;

/** A chunk near the query vector, with its distance, and its document's metadata and name when asked for. */
export interface NearChunk extends ChunkRow {
  distance: number;
  /** The dataset's count of chunks ever removed from its index, in the statement's snapshot. */
  removed: string;
}

/**
 * The query vector as a binary parameter, in pgvector's binary form (dimensions, a zero, then the
 * float4s, big-endian): node-postgres sends a Buffer in binary, and PostgreSQL reads it with the
 * type's receive function, which costs far less than the text form on both sides.
 */
function vectorParam(vector: number[]): Buffer {
  const buffer = Buffer.allocUnsafe(4 + 4 * vector.length);
  buffer.writeUInt16BE(vector.length, 0);
  buffer.writeUInt16BE(0, 2);
  for (let i = 0; i < vector.length; i++) buffer.writeFloatBE(vector[i], 4 + 4 * i);
  return buffer;
}

/**
 * The search index's reads for a search: the rows of ranked chunks, the check of the keyword leg's
 * ranking against the filters, the vector leg's nearest chunks, and the counts that choose how each
 * leg applies the filters. A document's chunks are searchable from the transaction that indexes
 * them to the one that removes or replaces them, whatever its status meanwhile (a replacement keeps
 * the version it replaces searchable while it processes): no status is checked. The caller chooses the
 * connection (`Read`): a statement of its own (with its deadline) or a transaction's snapshot.
 */
@Injectable()
export class ChunkReadsRepository {
  /** The dataset's chunks' rows, with their document's id, metadata and file name. */
  async chunks(read: Read, datasetSeq: string, seqs: string[]): Promise<Map<string, ChunkRow>> {
    if (seqs.length === 0) return new Map();
    const rows = await read<ChunkRow>(
      `SELECT ${CHUNK_COLUMNS}, ${DOCUMENT_COLUMNS}
         FROM chunks c JOIN documents d ON d.dataset_seq = c.dataset_seq AND d.id = c.document_id
        WHERE c.seq = ANY($2::bigint[]) AND c.dataset_seq = $1`,
      [datasetSeq, seqs],
    );
    return new Map(rows.map((row) => [row.seq, row]));
  }

  /**
   * The documents of the dataset's chunks among `seqs` (a chunk deleted since it was ranked has none):
   * what an evaluation needs of a ranking, without the chunks' text.
   */
  async documentsOfChunks(read: Read, datasetSeq: string, seqs: string[]): Promise<Map<string, string>> {
    if (seqs.length === 0) return new Map();
    const rows = await read<{ seq: string; documentId: string }>(
      `SELECT c.seq, c.document_id AS "documentId" FROM chunks c
        WHERE c.seq = ANY($2::bigint[]) AND c.dataset_seq = $1`,
      [datasetSeq, seqs],
    );
    return new Map(rows.map((row) => [row.seq, row.documentId]));
  }

  /** Those of `ids` that are documents of the dataset, whatever their status. */
  async documentsAmong(read: Read, datasetId: string, ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await read<{ id: string }>(
      `SELECT d.id FROM documents d WHERE d.dataset_id = $1 AND d.id = ANY($2::text[])`,
      [datasetId, ids],
    );
    return new Set(rows.map((row) => row.id));
  }

  /**
   * For each condition, up to `limit` of the dataset's documents (any status) that pass it: one
   * statement for all of them, each condition a branch with its own parameters, served by the
   * documents' metadata index as a search's filter is.
   */
  async documentsPassingEach(
    read: Read,
    datasetId: string,
    conditions: DocumentCondition[],
    limit: number,
  ): Promise<string[][]> {
    if (conditions.length === 0) return [];
    const params: unknown[] = [datasetId, limit];
    const branches = conditions.map((condition, i) => {
      const { sql, params: own } = condition(params.length + 1);
      params.push(...own);
      return `(SELECT ${i} AS item, d.id FROM documents d WHERE d.dataset_id = $1 AND ${sql} LIMIT $2)`;
    });
    const rows = await read<{ item: number; id: string }>(branches.join('\nUNION ALL\n'), params);
    const found = conditions.map((): string[] => []);
    for (const row of rows) found[row.item].push(row.id);
    return found;
  }

  /**
   * Up to `count` of the dataset's chunks, drawn by a hash of their key: the same chunks each time
   * while the dataset holds them, spread over all its documents.
   */
  sample(read: Read, datasetSeq: string, count: number): Promise<{ seq: string; content: string }[]> {
    return read(
      `SELECT c.seq::text AS seq, c.content FROM chunks c
        WHERE c.dataset_seq = $1
        ORDER BY hashint8(c.seq), c.seq
        LIMIT $2`,
      [datasetSeq, count],
    );
  }

  /**
   * Of `ranked` (chunk seqs, best first), the first `limit` that belong to documents passing the
   * filter, with their rows and their place in `ranked` (from 1).
   */
  passing(
    read: Read,
    ranked: number[],
    limit: number,
    condition: DocumentCondition,
  ): Promise<(ChunkRow & { rank: number })[]> {
    const { sql, params } = condition(3);
    // The rows come in rank order (PostgreSQL knows the function scan's order is the ordinality's),
    // so the statement stops after the last row wanted, whatever the length of the list. For a
    // filter it expects to pass few, the planner may start instead from the documents that pass,
    // found through their index, and join their chunks to the list.
    return read(
      `SELECT ${CHUNK_COLUMNS}, ${DOCUMENT_COLUMNS}, r.rank::int4 AS rank
         FROM unnest($1::bigint[]) WITH ORDINALITY AS r (seq, rank)
         JOIN chunks c ON c.seq = r.seq
         JOIN documents d ON d.dataset_seq = c.dataset_seq AND d.id = c.document_id
        WHERE ${sql}
        ORDER BY r.rank
        LIMIT $2`,
      [ranked, limit, ...params],
    );
  }

  /**
   * The dataset's `candidates` chunks nearest to `vector` by cosine distance, nearest first (then by
   * chunk), of documents passing the filter; the first `shown` carry their document's metadata
   * and file name.
   * `exact` scans the dataset's rows (under a filter, those of the documents that pass it, found
   * through the documents' metadata index); otherwise the HNSW index of the dimension is walked (with
   * the iterative scan of the session's settings, see `SearchPool`), each chunk it passes checked
   * against the filter through its document's primary key. Empty when the dataset is no longer
   * embedded by `model`, or is being re-embedded.
   */
  async nearest(
    read: Read,
    query: {
      datasetSeq: string;
      /** The dataset's id, which its documents carry (under a filter). */
      datasetId: string;
      model: string;
      vector: number[];
      candidates: number;
      shown: number;
      /** The condition the chunks' documents must pass, or null for all. */
      condition: DocumentCondition | null;
      exact: boolean;
    },
  ): Promise<NearChunk[]> {
    const { datasetSeq, datasetId, model, vector, candidates, shown, condition, exact } = query;
    const dims = vector.length;
    // The filter's condition is on documents. Exactly, they are joined, named by their dataset, and the planner starts from
    // those that pass when they are few (given the statistics of migration 15). Walking, each chunk
    // the walk passes looks up its document in a subquery that OFFSET 0 keeps from becoming a join,
    // so that the walk stops as soon as it has `candidates` (under a join, the plan sorted what a
    // whole walk found). Neither takes a list of document ids: planning `= ANY` over thousands of
    // them cost more than the walk (docs/search.md, Two legs).
    const rendered = condition?.(7);
    const join =
      rendered && exact
        ? 'JOIN documents d ON d.dataset_seq = c.dataset_seq AND d.id = c.document_id AND d.dataset_id = $6'
        : '';
    const passing = !rendered
      ? ''
      : exact
        ? `AND ${rendered.sql}`
        : `AND EXISTS (SELECT FROM documents d
           WHERE d.dataset_seq = $1 AND d.id = c.document_id AND d.dataset_id = $6 AND ${rendered.sql} OFFSET 0)`;
    // The HNSW index is on the expression embedding::halfvec(dims), which the ORDER BY must repeat to
    // use it; the score is the single-precision cosine all the same. relaxed_order, and half
    // precision, may return rows slightly out of order: they are ranked again by their distance.
    const order = exact
      ? 'c.embedding <=> $2::vector'
      : `(c.embedding::halfvec(${dims})) <=> $2::halfvec(${dims})`;
    // The model is checked in the statement's own snapshot, once (it does not depend on the row): a
    // re-embedding's switch since the dataset was looked up would rank the query against another
    // model's vectors.
    // The documents of the first `shown` only are read: OFFSET 0 keeps the lateral subquery a
    // subquery, whose rank condition becomes a one-time filter before its index lookup (pulled up
    // into a join, the condition would be checked after the lookup).
    const rows = await read<NearChunk & { metadata: ChunkRow['metadata'] | null; filename: string | null }>(
      // Indented little: pg_stat_activity shows a statement's first 1,024 bytes, and the walk's ORDER BY
      // must be among them (test/search.e2e-spec.ts looks for it there).
      `SELECT r.seq, r.id, r.content, r."documentId", r.ordinal, r.page, r."charStart", r."charEnd",
         r.distance, m.metadata, m.filename,
         (SELECT s.chunks_removed::text FROM dataset_index s WHERE s.dataset_seq = $1) AS removed
       FROM (SELECT n.*, row_number() OVER (ORDER BY n.distance, n.seq) AS rank
         FROM (SELECT ${CHUNK_COLUMNS}, c.embedding <=> $2::vector AS distance
           FROM chunks c ${join}
           WHERE c.dataset_seq = $1 AND vector_dims(c.embedding) = ${dims} ${passing}
             AND EXISTS (SELECT FROM dataset_index s WHERE s.dataset_seq = $1 AND s.embedding_model = $5)
           ORDER BY ${order}
           LIMIT $3) n) r
       LEFT JOIN LATERAL (SELECT ${DOCUMENT_COLUMNS} FROM documents d
         WHERE d.dataset_seq = $1 AND d.id = r."documentId" AND r.rank <= $4 OFFSET 0) m ON true`,
      [
        datasetSeq,
        vectorParam(vector),
        candidates,
        shown,
        model,
        ...(rendered ? [datasetId, ...rendered.params] : []),
      ],
    );
    // Ranked as the SQL ranked them for the metadata: by distance, then chunk.
    return rows
      .sort((a, b) => a.distance - b.distance || Number(a.seq) - Number(b.seq))
      .map(({ metadata, filename, ...row }) => (metadata === null ? row : { ...row, metadata, filename }));
  }

  /**
   * `nearest`'s walk of the HNSW index of the dimension for several datasets at once: their
   * `candidates` chunks nearest to `vector` together, each with its dataset. A chunk of a dataset no
   * longer embedded by `model` (checked in the statement's snapshot, as `nearest` does) is left out.
   */
  async nearestAcross(
    read: Read,
    query: {
      datasetSeqs: string[];
      model: string;
      vector: number[];
      candidates: number;
      shown: number;
      condition: DocumentCondition | null;
    },
  ): Promise<(NearChunk & { datasetSeq: string })[]> {
    const { datasetSeqs, model, vector, candidates, shown, condition } = query;
    const dims = vector.length;
    const rendered = condition?.(6);
    const passing = rendered
      ? `AND EXISTS (SELECT FROM documents d WHERE d.dataset_seq = c.dataset_seq AND d.id = c.document_id AND ${rendered.sql} OFFSET 0)`
      : '';
    const rows = await read<
      NearChunk & { datasetSeq: string; metadata: ChunkRow['metadata'] | null; filename: string | null }
    >(
      `SELECT r.seq, r.id, r.content, r."documentId", r.ordinal, r.page, r."charStart", r."charEnd",
         r.distance, r.dataset_seq::text AS "datasetSeq", m.metadata, m.filename,
         s.chunks_removed::text AS removed
       FROM (SELECT n.*, row_number() OVER (ORDER BY n.distance, n.seq) AS rank
         FROM (SELECT ${CHUNK_COLUMNS}, c.dataset_seq, c.embedding <=> $2::vector AS distance
           FROM chunks c
           WHERE c.dataset_seq = ANY($1::bigint[]) AND vector_dims(c.embedding) = ${dims} ${passing}
           ORDER BY (c.embedding::halfvec(${dims})) <=> $2::halfvec(${dims})
           LIMIT $3) n) r
       JOIN dataset_index s ON s.dataset_seq = r.dataset_seq AND s.embedding_model = $5
       LEFT JOIN LATERAL (SELECT ${DOCUMENT_COLUMNS} FROM documents d
         WHERE d.dataset_seq = r.dataset_seq AND d.id = r."documentId" AND r.rank <= $4 OFFSET 0) m ON true`,
      [datasetSeqs, vectorParam(vector), candidates, shown, model, ...(rendered?.params ?? [])],
    );
    return rows
      .sort((a, b) => a.distance - b.distance || Number(a.seq) - Number(b.seq))
      .map(({ metadata, filename, ...row }) => (metadata === null ? row : { ...row, metadata, filename }));
  }

  /**
   * How many of the dataset's documents with chunks pass the filter, and the chunks they hold: how many
   * chunks each leg may return, which decides how it finds them (`scansExactly`, `ranksPassing`).
   * One statement through the documents' metadata index, whatever the number of queries. It names the
   * dataset by id, which one PostgreSQL's index of a dataset's documents leads with, and by seq, which
   * routes it to the dataset's shard on Citus.
   */
  async passingDocuments(
    read: Read,
    dataset: { id: string; seq: string },
    condition: DocumentCondition,
  ): Promise<PassingDocuments> {
    const { sql, params } = condition(3);
    const [row] = await read<PassingDocuments>(
      `SELECT count(*)::int4 AS documents, coalesce(sum(d.chunks_created), 0)::float8 AS chunks
         FROM documents d
        WHERE d.dataset_id = $1 AND d.dataset_seq = $2 AND d.chunks_created > 0 AND ${sql}`,
      [dataset.id, dataset.seq, ...params],
    );
    return row;
  }

  /**
   * The chunks (seqs) of the dataset's documents that pass the filter, as `read`'s snapshot
   * sees them; null when they are more than `max`. Through the documents' metadata index and the
   * chunks' document index: what the keyword leg ranks under a selective filter.
   */
  async passingChunks(
    read: Read,
    datasetId: string,
    condition: DocumentCondition,
    max: number,
  ): Promise<Set<number> | null> {
    const { sql, params } = condition(3);
    const rows = await read<{ seq: string }>(
      `SELECT c.seq FROM documents d JOIN chunks c ON c.dataset_seq = d.dataset_seq AND c.document_id = d.id
        WHERE d.dataset_id = $1 AND ${sql}
        LIMIT $2`,
      [datasetId, max + 1, ...params],
    );
    return rows.length > max ? null : new Set(rows.map((row) => Number(row.seq)));
  }

  /** The chunks of all datasets embedded at `dimensions`: those the dimension's HNSW index holds. */
  async indexedChunks(read: Read, dimensions: number): Promise<number> {
    const [row] = await read<{ chunks: number }>(
      `SELECT coalesce(sum(chunk_count), 0)::float8 AS chunks FROM dataset_index WHERE embedding_dimensions = $1`,
      [dimensions],
    );
    return row.chunks;
  }
}
