import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import {
  spanText,
  type TextChunk,
  textFrom,
  type TextStretch,
} from 'src/modules/chunk-index/document-text.js';

export interface PlacedChunk extends TextChunk {
  id: string;
  documentId: string;
  ordinal: number;
  page: number | null;
}

/** A chunk as its document's reader lists it, with the tokens the chunker counted in it. */
export interface ListedChunk extends PlacedChunk {
  tokenCount: number;
}

/** A page or slide of a document, and where its chunks lie in the document's text. */
export interface PageRange {
  page: number;
  charStart: number;
  charEnd: number;
}

/** How many chunks a page of a document's text reads at a time. */
const CHUNKS_PER_READ = 32;

/**
 * Chunks read as passages of their documents, for reading them: the passages around a search result,
 * and a document's text, which is kept only as its chunks. Callers check that
 * the caller may see the document (its dataset) first, as every read by id here is by document or chunk.
 */
@Injectable()
export class PassagesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The dataset and document of a chunk, or null for an unknown chunk. */
  async chunkOwner(
    chunkId: string,
  ): Promise<{ documentId: string; datasetId: string; ordinal: number } | null> {
    const [row] = await this.db.query<{ document_id: string; dataset_id: string; ordinal: number }[]>(
      `SELECT c.document_id, d.dataset_id, c.ordinal
         FROM chunks c JOIN documents d ON d.dataset_seq = c.dataset_seq AND d.id = c.document_id
        WHERE c.id = $1`,
      [chunkId],
    );
    return row ? { documentId: row.document_id, datasetId: row.dataset_id, ordinal: row.ordinal } : null;
  }

  /**
   * Up to `maxCharacters` of a document's text from offset `from` (see `textFrom`), reading its chunks
   * `CHUNKS_PER_READ` at a time from the one holding `from` until the text is long enough: a page of a
   * large document reads only its own.
   */
  async text(documentId: string, from: number, maxCharacters: number): Promise<TextStretch> {
    const chunks: PlacedChunk[] = [];
    for await (const batch of this.chunksFrom(documentId, from)) {
      chunks.push(...batch);
      const stretch = textFrom(chunks, from, maxCharacters);
      if (stretch.truncated) return stretch;
    }
    return textFrom(chunks, from, maxCharacters);
  }

  private async *chunksFrom(documentId: string, from: number): AsyncGenerator<PlacedChunk[]> {
    let afterOrdinal = -1;
    for (;;) {
      const rows = await this.db.query<ChunkRow[]>(
        `SELECT id, document_id, ordinal, page, content, char_start, char_end FROM chunks
          WHERE document_id = $1 AND ordinal > $2 AND char_end > $3
          ORDER BY ordinal LIMIT ${CHUNKS_PER_READ}`,
        [documentId, afterOrdinal, from],
      );
      if (rows.length === 0) return;
      yield rows.map(placed);
      if (rows.length < CHUNKS_PER_READ) return;
      afterOrdinal = rows[rows.length - 1].ordinal;
    }
  }

  /** A chunk with the `radius` chunks on either side of it, in order. */
  async neighbourhood(documentId: string, ordinal: number, radius: number): Promise<PlacedChunk[]> {
    const rows = await this.db.query<ChunkRow[]>(
      `SELECT id, document_id, ordinal, page, content, char_start, char_end FROM chunks
        WHERE document_id = $1 AND ordinal BETWEEN $2 AND $3
        ORDER BY ordinal`,
      [documentId, ordinal - radius, ordinal + radius],
    );
    return rows.map(placed);
  }

  /**
   * The document's text from offset `from` to `to`, position for position (see `spanText`): its
   * chunks from the last one that starts before `from` (which says where a gap around it starts),
   * `CHUNKS_PER_READ` at a time, until one reaches `to`.
   */
  async span(documentId: string, from: number, to: number): Promise<string> {
    const chunks: PlacedChunk[] = [];
    let first: number | null = null;
    for (;;) {
      const rows: ChunkRow[] = await this.db.query<ChunkRow[]>(
        `SELECT id, document_id, ordinal, page, content, char_start, char_end FROM chunks
          WHERE document_id = $1
            AND ordinal >= coalesce($3, (SELECT max(ordinal) FROM chunks
                                          WHERE document_id = $1 AND char_start < $2), 0)
          ORDER BY ordinal LIMIT ${CHUNKS_PER_READ}`,
        [documentId, from, first],
      );
      chunks.push(...rows.map(placed));
      const last = rows.at(-1);
      if (!last || rows.length < CHUNKS_PER_READ || last.char_end >= to) break;
      first = last.ordinal + 1;
    }
    return spanText(chunks, from, to);
  }

  /**
   * Each page or slide of the document that has chunks, in order, from the start of its first chunk
   * to the end of its last: a page's range, as far as the stored chunks tell it (a page without text
   * has none). Empty for a document without pages.
   */
  pages(documentId: string): Promise<PageRange[]> {
    return this.db.query<PageRange[]>(
      `SELECT page, min(char_start)::int4 AS "charStart", max(char_end)::int4 AS "charEnd" FROM chunks
        WHERE document_id = $1 AND page IS NOT NULL
        GROUP BY page ORDER BY page`,
      [documentId],
    );
  }

  /**
   * Up to `limit` of the document's chunks in order from its `offset`th (0 first), and how many it
   * has. Ordinals run from 0 without holes, so the page is found through the index, not skipped to.
   */
  async listed(
    documentId: string,
    offset: number,
    limit: number,
  ): Promise<{ items: ListedChunk[]; total: number }> {
    const [rows, [count]] = await Promise.all([
      this.db.query<(ChunkRow & { token_count: number })[]>(
        `SELECT id, document_id, ordinal, page, content, char_start, char_end, token_count FROM chunks
          WHERE document_id = $1 AND ordinal >= $2
          ORDER BY ordinal LIMIT $3`,
        [documentId, offset, limit],
      ),
      this.db.query<{ total: number }[]>(
        `SELECT count(*)::int4 AS total FROM chunks WHERE document_id = $1`,
        [documentId],
      ),
    ]);
    return { items: rows.map(listed), total: count.total };
  }

  /** The document's chunk `chunkId` with the `radius` chunks on either side, in order; null if it has none such. */
  async around(documentId: string, chunkId: string, radius: number): Promise<ListedChunk[] | null> {
    const rows = await this.db.query<(ChunkRow & { token_count: number })[]>(
      `SELECT c.id, c.document_id, c.ordinal, c.page, c.content, c.char_start, c.char_end, c.token_count
         FROM chunks t JOIN chunks c
           ON c.dataset_seq = t.dataset_seq AND c.document_id = t.document_id AND c.ordinal BETWEEN t.ordinal - $3 AND t.ordinal + $3
        WHERE t.id = $2 AND t.document_id = $1
        ORDER BY c.ordinal`,
      [documentId, chunkId, radius],
    );
    return rows.length === 0 ? null : rows.map(listed);
  }

  /** The length of a document's text as its chunks cover it (the last one ends there). */
  async textLength(documentId: string): Promise<number> {
    const [row] = await this.db.query<{ char_end: number }[]>(
      `SELECT char_end FROM chunks WHERE document_id = $1 ORDER BY ordinal DESC LIMIT 1`,
      [documentId],
    );
    return row?.char_end ?? 0;
  }
}

interface ChunkRow {
  id: string;
  document_id: string;
  ordinal: number;
  page: number | null;
  content: string;
  char_start: number;
  char_end: number;
}

function placed(row: ChunkRow): PlacedChunk {
  return {
    id: row.id,
    documentId: row.document_id,
    ordinal: row.ordinal,
    page: row.page,
    content: row.content,
    charStart: row.char_start,
    charEnd: row.char_end,
  };
}

function listed(row: ChunkRow & { token_count: number }): ListedChunk {
  return { ...placed(row), tokenCount: row.token_count };
}
