import type { Tx } from 'src/database/transaction.js';

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

/** Deletes a document's chunks (their postings cascade) and returns how many there were and their length. */
export async function removeDocumentChunks(
  tx: Tx,
  documentId: string,
): Promise<{ chunks: number; length: number }> {
  const [removed] = await tx.query<{ chunks: number; length: number }[]>(
    `WITH gone AS (DELETE FROM chunks WHERE document_id = $1 RETURNING length)
     SELECT count(*)::int AS chunks, coalesce(sum(length), 0)::float8 AS length FROM gone`,
    [documentId],
  );
  return removed;
}
