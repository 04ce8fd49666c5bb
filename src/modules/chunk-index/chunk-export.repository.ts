import { Injectable } from '@nestjs/common';
import type { Tx } from 'src/database/transaction.js';

/** A chunk as an archive carries it: where it stands in its document, and its vector when it has one. */
export interface StoredChunk {
  ordinal: number;
  content: string;
  tokenCount: number;
  page: number | null;
  charStart: number;
  charEnd: number;
  /**
   * The float32 values exactly as stored, big-endian (pgvector's binary form without its header), or
   * null for a chunk without a vector.
   */
  vector: Buffer | null;
}

/**
 * A dataset's chunks read out whole, for an export (`DatasetExportService`): one document's chunks at a
 * time, in pages by ordinal (`chunks_document_idx`), inside the caller's snapshot.
 */
@Injectable()
export class ChunkExportRepository {
  /** The chunks of a document after `afterOrdinal`, at most `limit`, with their vectors when asked. */
  pageOfDocument(
    tx: Tx,
    documentId: string,
    afterOrdinal: number,
    limit: number,
    { vectors }: { vectors: boolean },
  ): Promise<StoredChunk[]> {
    // pgvector's binary send form (dimension and a spare int16, then the floats): neither text nor an
    // array to parse, which cost more than the rest of an export together.
    return tx.query<StoredChunk[]>(
      `SELECT ordinal, content, token_count AS "tokenCount", page, char_start AS "charStart",
              char_end AS "charEnd", ${vectors ? 'substring(vector_send(embedding) FROM 5)' : 'NULL::bytea'} AS vector
         FROM chunks WHERE document_id = $1 AND ordinal > $2 ORDER BY ordinal LIMIT $3`,
      [documentId, afterOrdinal, limit],
    );
  }

  async countOfDocument(tx: Tx, documentId: string): Promise<number> {
    const [row] = await tx.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM chunks WHERE document_id = $1`,
      [documentId],
    );
    return row.n;
  }

  /** Where each of a document's chunks lies in its text, in order: enough to rebuild its headings. */
  spansOfDocument(tx: Tx, documentId: string): Promise<{ content: string; charStart: number }[]> {
    return tx.query<{ content: string; charStart: number }[]>(
      `SELECT content, char_start AS "charStart" FROM chunks WHERE document_id = $1 ORDER BY ordinal`,
      [documentId],
    );
  }
}
