import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { type TextChunk, textFrom, type TextStretch } from 'src/modules/chunk-index/document-text.js';

export interface PlacedChunk extends TextChunk {
  id: string;
  documentId: string;
  ordinal: number;
  page: number | null;
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
         FROM chunks c JOIN documents d ON d.id = c.document_id
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
