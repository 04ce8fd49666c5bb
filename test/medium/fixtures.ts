import pg from 'pg';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { newId } from 'src/common/ids/ids.js';
import type { Read } from 'src/database/read.js';
import type {
  ChunkIndexRepository,
  IndexedChunk,
  IndexTarget,
} from 'src/modules/chunk-index/chunk-index.repository.js';
import { createTestDatabase, type TestDatabase } from '../utils/test-database.js';

/**
 * A spec file's own database (cloned from the migrated template), with the connections the
 * repositories take: TypeORM's DataSource for the writers, a pg pool for the fixtures' rows and checks.
 */
export interface MediumDatabase {
  database: TestDatabase;
  dataSource: DataSource;
  sql: pg.Pool;
  /** Statements each on their own, on `sql`. */
  read: Read;
  close(): Promise<void>;
}

/** A migrated database of its own; `entities` for a repository of the service that maps rows with TypeORM. */
export async function openDatabase({
  entities = [],
}: Pick<DataSourceOptions, 'entities'> = {}): Promise<MediumDatabase> {
  const database = await createTestDatabase();
  const dataSource = new DataSource({ type: 'postgres', url: database.url, extra: { max: 4 }, entities });
  const sql = new pg.Pool({ connectionString: database.url, max: 2 });
  try {
    await dataSource.initialize();
  } catch (error) {
    await sql.end();
    await database.drop();
    throw error;
  }
  return {
    database,
    dataSource,
    sql,
    read: async <T>(text: string, values?: unknown[]) => (await sql.query(text, values)).rows as T[],
    async close() {
      await dataSource.destroy();
      // pg's pool.end() resolves before its connections have closed: the DROP ... WITH (FORCE) below may
      // still terminate one, whose error would otherwise reach the pool with no listener and fail the file.
      sql.on('error', () => undefined);
      await sql.end();
      await database.drop();
    },
  };
}

export async function insertAccount(sql: pg.Pool): Promise<string> {
  const id = newId('acc');
  await sql.query('INSERT INTO accounts (id, name) VALUES ($1, $1)', [id]);
  return id;
}

export interface DatasetRow {
  id: string;
  seq: string;
  language: string;
}

export async function insertDataset(
  sql: pg.Pool,
  accountId: string,
  embedding: { model: string; dimensions: number } | null = null,
): Promise<DatasetRow> {
  const id = newId('ds');
  const { rows } = await sql.query<{ seq: string; language: string }>(
    `INSERT INTO datasets (id, account_id, name) VALUES ($1, $2, $1) RETURNING seq::text, language::text`,
    [id, accountId],
  );
  await sql.query(
    `INSERT INTO dataset_index (dataset_seq, dataset_id, embedding_model, embedding_dimensions) VALUES ($1, $2, $3, $4)`,
    [rows[0].seq, id, embedding?.model ?? null, embedding?.dimensions ?? null],
  );
  return { id, ...rows[0] };
}

export async function insertDocument(
  sql: pg.Pool,
  datasetId: string,
  { status = 'ready', metadata = {} }: { status?: string; metadata?: Record<string, unknown> } = {},
): Promise<string> {
  const id = newId('doc');
  await sql.query(
    `INSERT INTO documents (id, dataset_id, dataset_seq, kind, media_type, size_bytes, status, metadata)
     SELECT $1, $2, seq, 'text', 'text/plain', 0, $3, $4 FROM datasets WHERE id = $2`,
    [id, datasetId, status, metadata],
  );
  return id;
}

/** The document's index target in `dataset`. */
export const target = (dataset: DatasetRow, documentId: string): IndexTarget => ({
  datasetId: dataset.id,
  datasetSeq: dataset.seq,
  language: dataset.language,
  documentId,
});

/** Chunks of the texts, laid end to end in their document (one token a word, no page). */
export function chunksOf(contents: string[]): IndexedChunk[] {
  let at = 0;
  return contents.map((content) => {
    const charStart = at;
    at += content.length + 1;
    return { content, tokenCount: content.split(' ').length, charStart, charEnd: charStart + content.length };
  });
}

/**
 * Writes a document's chunks (`replaceDocumentChunks`) in a transaction of its own, as ingestion does;
 * `vectors` are of the dataset's model (`FIXTURE_MODEL` when it has none yet).
 */
export function indexDocument(
  dataSource: DataSource,
  index: ChunkIndexRepository,
  into: IndexTarget,
  contents: string[],
  vectors: number[][] | null = null,
): Promise<string | null> {
  return dataSource.transaction('READ COMMITTED', async (tx) => {
    await index.lockDataset(tx, into.datasetId);
    const [state] = await tx.query<{ name: string | null; dimensions: number | null }[]>(
      'SELECT embedding_model AS name, embedding_dimensions AS dimensions FROM dataset_index WHERE dataset_id = $1',
      [into.datasetId],
    );
    const model = vectors && {
      name: state?.name ?? FIXTURE_MODEL,
      dimensions: state?.dimensions ?? vectors[0]?.length ?? 0,
    };
    return index.replaceDocumentChunks(tx, into, chunksOf(contents), model && { ...model, vectors: vectors });
  });
}

/** The model of the vectors `indexDocument` writes into a dataset that has none yet. */
export const FIXTURE_MODEL = 'fixture-model';

/** A dataset's BM25 statistics: its totals and each term's document frequency, by term. */
export interface Statistics {
  chunkCount: number;
  totalLength: number;
  df: Record<string, number>;
}

/** The statistics as stored: the dataset's index state and `term_stats`. */
export async function storedStatistics(sql: pg.Pool, datasetSeq: string): Promise<Statistics> {
  const { rows: datasets } = await sql.query<{ chunks: number; length: number }>(
    `SELECT chunk_count::float8 AS chunks, total_chunk_length::float8 AS length FROM dataset_index WHERE dataset_seq = $1`,
    [datasetSeq],
  );
  const { rows: terms } = await sql.query<{ term: string; df: number }>(
    'SELECT term, df FROM term_stats WHERE dataset_seq = $1',
    [datasetSeq],
  );
  return {
    chunkCount: datasets[0].chunks,
    totalLength: datasets[0].length,
    df: Object.fromEntries(terms.map(({ term, df }) => [term, df])),
  };
}

/** The statistics counted again from the chunks and their postings. */
export async function recountedStatistics(sql: pg.Pool, datasetSeq: string): Promise<Statistics> {
  const { rows: chunks } = await sql.query<{ chunks: number; length: number }>(
    `SELECT count(*)::float8 AS chunks, coalesce(sum(length), 0)::float8 AS length
       FROM chunks WHERE dataset_seq = $1`,
    [datasetSeq],
  );
  const { rows: terms } = await sql.query<{ term: string; df: number }>(
    'SELECT term, count(*)::int AS df FROM chunk_terms WHERE dataset_seq = $1 GROUP BY term',
    [datasetSeq],
  );
  return {
    chunkCount: chunks[0].chunks,
    totalLength: chunks[0].length,
    df: Object.fromEntries(terms.map(({ term, df }) => [term, df])),
  };
}

/** Each term's `term_stats` version in the dataset. */
export async function termVersions(sql: pg.Pool, datasetSeq: string): Promise<Record<string, bigint>> {
  const { rows } = await sql.query<{ term: string; version: string }>(
    'SELECT term, version::text AS version FROM term_stats WHERE dataset_seq = $1',
    [datasetSeq],
  );
  return Object.fromEntries(rows.map(({ term, version }) => [term, BigInt(version)]));
}

export async function insertWebhook(
  sql: pg.Pool,
  accountId: string,
  {
    active = true,
    previousSecretExpiresInSeconds = null,
  }: { active?: boolean; previousSecretExpiresInSeconds?: number | null } = {},
): Promise<string> {
  const id = newId('wh');
  await sql.query(
    `INSERT INTO webhooks (id, account_id, url, events, active, secret, previous_secret, previous_secret_expires_at)
     VALUES ($1, $2, 'https://receiver.example/hooks', '{dataset.updated}', $3, 'whsec_new', $4,
             now() + make_interval(secs => $5))`,
    [
      id,
      accountId,
      active,
      previousSecretExpiresInSeconds === null ? null : 'whsec_old',
      previousSecretExpiresInSeconds,
    ],
  );
  return id;
}

/** A delivery of an event about `resourceId`, inserted after every earlier one (its `seq` is larger). */
export async function insertDelivery(
  sql: pg.Pool,
  webhookId: string,
  resourceId: string,
  {
    status = 'pending',
    attempts = 0,
  }: { status?: 'pending' | 'delivered' | 'failed'; attempts?: number } = {},
): Promise<string> {
  const id = newId('dlv');
  await sql.query(
    `INSERT INTO webhook_deliveries (id, webhook_id, event_id, event, resource_id, body, status, attempts, next_attempt_at)
     VALUES ($1, $2, $3, 'dataset.updated', $4, '{}', $5, $6, now() - interval '1 second')`,
    [id, webhookId, newId('evt'), resourceId, status, attempts],
  );
  return id;
}
