import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { DATABASE_CONFIG, type DatabaseConfig } from 'src/database/database.config.js';
import { CHUNK_INDEX_CONFIG, type ChunkIndexConfig } from 'src/modules/chunk-index/chunk-index.config.js';

/** A dataset's own HNSW index: the dataset's key and the dimension of its vectors. */
export interface DatasetVectorIndex {
  datasetSeq: string;
  dimensions: number;
}

/** The name of a dataset's own index; `OWN_INDEX_NAME` reads it back. */
export function ownIndexName({ datasetSeq, dimensions }: DatasetVectorIndex): string {
  return `chunks_embedding_${dimensions}_ds${datasetSeq}_idx`;
}
const OWN_INDEX_NAME = /^chunks_embedding_(\d+)_ds(\d+)_idx$/;

/** The lock that lets one build run at a time across the service's processes. */
const BUILD_LOCK = `hashtextextended('dataset vector index build', 0)`;

/**
 * The HNSW indexes of single datasets (docs/search.md, per-dataset indexes): a partial index over
 * the same expression and parameters as the dimension's shared index (`ChunkIndexRepository.
 * ensureVectorIndex`), restricted to one dataset's chunks, which the planner picks for a search of
 * that dataset. Built and dropped with `CONCURRENTLY`, so that writes to `chunks` never wait for them,
 * on a session of its own outside the pool (a build can take minutes, and runs outside any
 * transaction). The index state's `vector_index_dimensions` records a built, valid index.
 */
@Injectable()
export class DatasetVectorIndexRepository {
  /** The backend of the build under way, cancelled by `cancelBuild`. */
  private buildPid: number | null = null;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(CHUNK_INDEX_CONFIG) private readonly config: Pick<ChunkIndexConfig, 'datasetIndexBuildMiB'>,
    @Inject(DATABASE_CONFIG) private readonly database: Pick<DatabaseConfig, 'url'>,
  ) {}

  /**
   * Datasets of at least `minChunks` chunks with vectors whose own index of their dimension is not
   * recorded as built (across accounts: the worker builds them by itself); one dataset when
   * `datasetSeq` is given, in a statement Citus routes to its shard.
   */
  async lacking(minChunks: number, datasetSeq?: string): Promise<DatasetVectorIndex[]> {
    const rows = await this.db.query<{ seq: string; dimensions: number }[]>(
      `SELECT dataset_seq AS seq, embedding_dimensions AS dimensions FROM dataset_index
        WHERE chunk_count >= $1 AND embedding_dimensions IS NOT NULL
          AND vector_index_dimensions IS DISTINCT FROM embedding_dimensions
          ${datasetSeq === undefined ? '' : 'AND dataset_seq = $2'}
        ORDER BY dataset_seq`,
      datasetSeq === undefined ? [minChunks] : [minChunks, datasetSeq],
    );
    return rows.map((row) => ({ datasetSeq: row.seq, dimensions: row.dimensions }));
  }

  /**
   * Own indexes of datasets that no longer exist or whose vectors are of another dimension now
   * (re-embedded): read from the catalogue by name, so that an index left by a deletion whose drop
   * never ran is found too. `datasetSeq` limits the answer to one dataset's.
   */
  async stale(datasetSeq?: string): Promise<DatasetVectorIndex[]> {
    const rows = await this.db.query<{ name: string }[]>(
      `SELECT c.relname AS name FROM pg_index i
         JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = 'chunks'::regclass AND c.relname LIKE 'chunks\\_embedding\\_%\\_ds%\\_idx'`,
    );
    const indexes = rows.flatMap(({ name }) => {
      const match = OWN_INDEX_NAME.exec(name);
      return match ? [{ dimensions: Number(match[1]), datasetSeq: match[2] }] : [];
    });
    const mine = indexes.filter((index) => datasetSeq === undefined || index.datasetSeq === datasetSeq);
    if (mine.length === 0) return [];
    const live = await this.db.query<{ seq: string; dimensions: number | null }[]>(
      `SELECT dataset_seq AS seq, embedding_dimensions AS dimensions FROM dataset_index
        WHERE dataset_seq = ANY($1::bigint[])`,
      [mine.map((index) => index.datasetSeq)],
    );
    const current = new Map(live.map((row) => [row.seq, row.dimensions]));
    return mine.filter((index) => current.get(index.datasetSeq) !== index.dimensions);
  }

  /**
   * Builds the dataset's own index, waiting for any build under way in another process first. An
   * index of that name left invalid (a build that failed or was interrupted) is dropped and built
   * again. Records it on the dataset once valid; when the dataset was deleted or re-embedded at another
   * dimension meanwhile, drops it instead. Returns whether it was recorded.
   */
  async build(index: DatasetVectorIndex): Promise<boolean> {
    return this.session(true, async (session) => {
      await session.query(`SELECT pg_advisory_lock(${BUILD_LOCK})`);
      const name = ownIndexName(index);
      const { rows } = await session.query<{ valid: boolean }>(
        `SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass($1)`,
        [name],
      );
      if (rows[0] && !rows[0].valid) await session.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
      const { dimensions, datasetSeq } = index;
      const wanted = await session.query(
        `SELECT FROM dataset_index WHERE dataset_seq = $1 AND embedding_dimensions = $2`,
        [datasetSeq, dimensions],
      );
      if (wanted.rowCount === 0) return false;
      // A graph that outgrows maintenance_work_mem is built on disk, more slowly (docs/search.md).
      await session.query(`SET maintenance_work_mem = '${this.config.datasetIndexBuildMiB}MB'`);
      // Parameters as the shared index's: pgvector's defaults (m 16, ef_construction 64).
      await session.query(
        `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${name} ON chunks
           USING hnsw ((embedding::halfvec(${dimensions})) halfvec_cosine_ops)
           WHERE vector_dims(embedding) = ${dimensions} AND dataset_seq = ${BigInt(datasetSeq)}`,
      );
      const recorded = await session.query(
        `UPDATE dataset_index SET vector_index_dimensions = $2 WHERE dataset_seq = $1 AND embedding_dimensions = $2`,
        [datasetSeq, dimensions],
      );
      if (recorded.rowCount === 0) await session.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
      return recorded.rowCount !== 0;
    });
  }

  /**
   * Drops a dataset's own index (`DROP INDEX CONCURRENTLY`: it waits for the transactions using
   * `chunks` to end, holding none of them up). Its record on the dataset, if the dataset is still
   * there, names another dimension than its vectors' and is overwritten by the next build.
   */
  async drop(index: DatasetVectorIndex): Promise<void> {
    await this.session(false, (session) =>
      session.query(`DROP INDEX CONCURRENTLY IF EXISTS ${ownIndexName(index)}`),
    );
  }

  /** Drops the `stale` indexes (of one dataset, with `datasetSeq`), one after the other; returns them. */
  async dropStale(datasetSeq?: string): Promise<DatasetVectorIndex[]> {
    const stale = await this.stale(datasetSeq);
    for (const index of stale) await this.drop(index);
    return stale;
  }

  /** Cancels the build under way in this process, if any: its index is left invalid, rebuilt later. */
  async cancelBuild(): Promise<void> {
    if (this.buildPid !== null) await this.db.query('SELECT pg_cancel_backend($1)', [this.buildPid]);
  }

  /**
   * `work` on a session of its own, without a statement timeout; its end releases its locks. A
   * build's session is the one `cancelBuild` cancels.
   */
  private async session<T>(build: boolean, work: (session: pg.Client) => Promise<T>): Promise<T> {
    const session = new pg.Client({
      connectionString: this.database.url,
      application_name: 'dataset-search vector index',
      statement_timeout: 0,
    });
    session.on('error', () => undefined);
    await session.connect();
    try {
      if (build) {
        const { rows } = await session.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        this.buildPid = rows[0].pid;
      }
      return await work(session);
    } finally {
      if (build) this.buildPid = null;
      await session.end().catch(() => undefined);
    }
  }
}
