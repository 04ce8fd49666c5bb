import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { DATABASE_CONFIG, type DatabaseConfig } from 'src/database/database.config.js';
import { readOn } from 'src/database/read.js';
import type { Tx } from 'src/database/transaction.js';
import { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import {
  ChunkVectorsRepository,
  type VectorModel,
} from 'src/modules/chunk-index/chunk-vectors.repository.js';
import { IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';

/** A run's hold on a dataset's re-embedding lock: the database session that holds it. */
export interface ReembeddingLock {
  datasetId: string;
  /** The session's backend, named by its pid and start time (a pid alone can be reused). */
  pid: number;
  backendStart: string;
}

/** The key of the dataset's (`$1`) re-embedding lock, a PostgreSQL advisory lock. */
const REEMBEDDING_KEY = `hashtextextended('dataset reembedding ' || $1, 0)`;

/**
 * The re-embedding lock, which a generation's build and the catch-up of chunks without vectors take,
 * and the writes of a dataset's generations (ReembedService); the vectors are written through
 * `ChunkVectorsRepository`, under the lock this checks.
 */
@Injectable()
export class ReembedRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(DATABASE_CONFIG) private readonly database: Pick<DatabaseConfig, 'url'>,
    private readonly chunkIndex: ChunkIndexRepository,
    private readonly chunkVectors: ChunkVectorsRepository,
    private readonly indexState: IndexStateRepository,
  ) {}

  /** The dataset's internal key, or null when there is no such dataset. */
  datasetSeq(datasetId: string): Promise<string | null> {
    return this.indexState.seqOf(readOn(this.db), datasetId);
  }

  /**
   * Runs `work` holding the dataset's re-embedding lock, or returns null at once when another run holds
   * it: two runs at once would embed the same chunks twice, and a catch-up beside a build would give
   * the chunks of the generation searched vectors the switch then replaces. A session-level advisory lock, held for the whole run by a session of its own,
   * outside the pool (the run's transactions need the pool's connections, and a pool of one would wait
   * for itself): a run that dies loses its session and the lock with it, so the command can always be
   * run again. A session can also end while its process runs on (a timeout, a failover, a backend
   * terminated): then another run may take the lock, so every write of the run checks, in its own
   * transaction, that its session still holds it (`holding`).
   */
  async withReembeddingLock<T>(
    datasetId: string,
    work: (lock: ReembeddingLock) => Promise<T>,
  ): Promise<T | null> {
    const session = new pg.Client({
      connectionString: this.database.url,
      application_name: 'dataset-search reembed',
    });
    // A session that ends under way is noticed by the run's next write, which then stops the run.
    session.on('error', () => undefined);
    await session.connect();
    try {
      const { rows } = await session.query<{ locked: boolean; pid: number; started: string }>(
        `SELECT pg_try_advisory_lock(${REEMBEDDING_KEY}) AS locked, pg_backend_pid() AS pid,
                (SELECT backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()) AS started`,
        [datasetId],
      );
      const [{ locked, pid, started }] = rows;
      if (!locked) return null;
      return await work({ datasetId, pid, backendStart: started });
    } finally {
      // Its end releases the lock; a session already gone has taken the lock with it.
      await session.end().catch(() => undefined);
    }
  }

  /**
   * Starts building the dataset's next generation of vectors, of `model`
   * (`ChunkVectorsRepository.requestGeneration`), under the chunk lock: after the indexing under way,
   * which decided where its vectors go, before the next.
   */
  requestGeneration(datasetId: string, model: VectorModel): Promise<'requested' | 'same' | 'other' | null> {
    return this.db.transaction('READ COMMITTED', async (tx) => {
      await this.chunkIndex.lockDataset(tx, datasetId);
      return this.chunkVectors.requestGeneration(tx, datasetId, model);
    });
  }

  /** Drops the generation being built (`ChunkVectorsRepository.cancelGeneration`), under the chunk lock. */
  cancelGeneration(datasetId: string): Promise<boolean> {
    return this.db.transaction('READ COMMITTED', async (tx) => {
      await this.chunkIndex.lockDataset(tx, datasetId);
      return this.chunkVectors.cancelGeneration(tx, datasetId);
    });
  }

  /**
   * Writes a page of vectors of the next generation, of `model`: `lost` when `lock` is no longer
   * held, `refused` when the generation being built is no longer of `model`; nothing is written then.
   */
  async setNextVectors(
    lock: ReembeddingLock,
    seqs: string[],
    vectors: number[][],
    model: VectorModel,
  ): Promise<'written' | 'refused' | 'lost'> {
    let written = false;
    const held = await this.holding(lock, async (tx) => {
      written = await this.chunkVectors.setNextVectors(tx, lock.datasetId, seqs, vectors, model);
    });
    if (!held) return 'lost';
    return written ? 'written' : 'refused';
  }

  /** The switch to the next generation (`ChunkVectorsRepository.switchGeneration`), or `lost`. */
  async switchGeneration(
    lock: ReembeddingLock,
    model: VectorModel,
  ): Promise<'switched' | 'incomplete' | 'refused' | 'lost'> {
    let outcome: 'switched' | 'incomplete' | 'refused' = 'refused';
    const held = await this.holding(lock, async (tx) => {
      outcome = await this.chunkVectors.switchGeneration(tx, lock.datasetId, model);
    });
    return held ? outcome : 'lost';
  }

  /**
   * Writes a page of vectors of `model` for chunks indexed without one (`ChunkVectorsRepository.fillVectors`):
   * `lost` when `lock` is no longer held, `refused` when the dataset holds another model's vectors or
   * is being re-embedded (or was deleted); nothing is written then.
   */
  async fillVectors(
    lock: ReembeddingLock,
    seqs: string[],
    vectors: number[][],
    model: VectorModel,
  ): Promise<'written' | 'refused' | 'lost'> {
    let written = false;
    const held = await this.holding(lock, async (tx) => {
      written = await this.chunkVectors.fillVectors(tx, lock.datasetId, seqs, vectors, model);
    });
    if (!held) return 'lost';
    return written ? 'written' : 'refused';
  }

  /**
   * `work` in a transaction of its own under the dataset's chunk lock (`ChunkIndexRepository.lockDataset`),
   * if the session of `lock` still holds the re-embedding lock; false otherwise. Checked under the chunk
   * lock, which every write of a run takes: a run that took the lock over from a lost session writes
   * only after this transaction, and this run, which has lost the lock, writes nothing after it.
   */
  private holding(lock: ReembeddingLock, work: (tx: Tx) => Promise<unknown>): Promise<boolean> {
    return this.db.transaction('READ COMMITTED', async (tx) => {
      await this.chunkIndex.lockDataset(tx, lock.datasetId);
      // pg_locks shows an advisory lock of one bigint key as its high and low 32 bits, objsubid 1.
      const [{ held }] = await tx.query<{ held: boolean }[]>(
        `SELECT EXISTS (
           SELECT FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid, (SELECT ${REEMBEDDING_KEY} AS key) k
            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
              AND l.classid::bigint = (k.key >> 32) & 4294967295 AND l.objid::bigint = k.key & 4294967295
              AND l.pid = $2 AND a.backend_start = $3::timestamptz
         ) AS held`,
        [lock.datasetId, lock.pid, lock.backendStart],
      );
      if (!held) return false;
      await work(tx);
      return true;
    });
  }
}
