import type { Tx } from 'src/database/transaction.js';

/**
 * The lock of a dataset's chunks, taken first, before any row lock, by every transaction that writes
 * a dataset's chunks or BM25 statistics, or decides what they hold: indexing, deleting or reprocessing
 * a document, deleting the dataset, and re-embedding (its start, its end, and each page of vectors it
 * writes). It keeps the statistics exact and these writers in one order. It is a lock of its own (a
 * transaction-level advisory lock on the dataset's id), not the dataset row's: indexing a large
 * document writes for seconds, and a writer of the row alone (an upload counting its document, a change
 * of name) must not wait for that. Such a writer takes the row `FOR NO KEY UPDATE`, which the key-share
 * locks of the chunks' foreign keys do not hold up; indexing updates the row only at its end.
 */
export async function lockDatasetChunks(tx: Tx, datasetId: string): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('dataset chunks ' || $1, 0))`, [datasetId]);
}

/**
 * BM25's N and total chunk length live on the dataset row; every transaction that adds or removes
 * chunks adjusts them here, so that they stay exact.
 */
export async function adjustChunkStats(
  tx: Tx,
  datasetId: string,
  chunks: number,
  totalLength: number,
): Promise<void> {
  if (chunks === 0 && totalLength === 0) return;
  await tx.query(
    `UPDATE datasets SET chunk_count = chunk_count + $2, total_chunk_length = total_chunk_length + $3 WHERE id = $1`,
    [datasetId, chunks, totalLength],
  );
}

/**
 * Deletes a document's chunks (their postings cascade) and returns how many there were and their
 * length. The terms of the postings that go lose their share of the document frequencies first and
 * get a new version; a term left in no chunk loses its row (see the term_stats migration: versions
 * come from a sequence, so the term coming back later never repeats a version a search process
 * trusts). Callers hold the dataset's chunk lock (`lockDatasetChunks`).
 */
export async function removeDocumentChunks(
  tx: Tx,
  documentId: string,
): Promise<{ chunks: number; length: number }> {
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
  const [removed] = await tx.query<{ chunks: number; length: number }[]>(
    `WITH gone AS (DELETE FROM chunks WHERE document_id = $1 RETURNING length)
     SELECT count(*)::int AS chunks, coalesce(sum(length), 0)::float8 AS length FROM gone`,
    [documentId],
  );
  return removed;
}
