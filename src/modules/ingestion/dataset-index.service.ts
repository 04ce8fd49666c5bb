import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { CHUNK_INDEX_CONFIG, type ChunkIndexConfig } from 'src/modules/chunk-index/chunk-index.config.js';
import {
  DatasetVectorIndexRepository,
  ownIndexName,
} from 'src/modules/chunk-index/dataset-vector-index.repository.js';

/** Every dataset, as opposed to one named by its seq. */
const ALL = null;

/**
 * The HNSW indexes of large datasets (docs/search.md, per-dataset indexes), kept by the worker in the
 * background: at start, indexes of datasets deleted or re-embedded at another dimension are dropped
 * and every dataset of `SEARCH_DATASET_INDEX_MIN_CHUNKS` chunks or more gets its index; after that, a
 * dataset is looked at again each time a document is indexed into it. One build at a time in a process
 * (and across processes, under the repository's lock); a build never holds up the ingestion job that
 * asked for it. Failures are logged and tried again at the next request or start.
 */
@Injectable()
export class DatasetIndexService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly minChunks: number;
  /** Datasets' seqs (or `ALL`) to look at, in the order asked. */
  private readonly pending = new Set<string | typeof ALL>();
  private running: Promise<void> | null = null;
  private stopping = false;

  constructor(
    private readonly indexes: DatasetVectorIndexRepository,
    @Inject(CHUNK_INDEX_CONFIG) config: Pick<ChunkIndexConfig, 'datasetIndexMinChunks'>,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.minChunks = config.datasetIndexMinChunks;
  }

  onApplicationBootstrap(): void {
    void this.request(ALL);
  }

  /** A build under way is cancelled (its invalid index is rebuilt at the next start). */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.indexes.cancelBuild().catch(() => undefined);
    await this.running;
  }

  /**
   * Looks at one dataset, by its seq (after a document was indexed into it), or at all of them with
   * `ALL`, after the work already asked for. Resolves when there is nothing left to do; never rejects.
   */
  request(datasetSeq: string | typeof ALL): Promise<void> {
    if (this.stopping) return Promise.resolve();
    if (datasetSeq !== ALL && this.minChunks === 0) return this.running ?? Promise.resolve();
    this.pending.add(datasetSeq);
    this.running ??= this.drain();
    return this.running;
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.size > 0 && !this.stopping) {
        const [next] = this.pending;
        this.pending.delete(next);
        await this.pass(next);
      }
    } finally {
      this.running = null;
    }
  }

  /** Never rejects: an unhandled rejection would end the process. */
  private async pass(datasetSeq: string | typeof ALL): Promise<void> {
    try {
      if (datasetSeq === ALL) {
        for (const index of await this.indexes.dropStale()) {
          this.logger.info({ index: ownIndexName(index) }, 'dropped the vector index of a dataset gone');
        }
      }
      if (this.minChunks === 0) return;
      for (const index of await this.indexes.lacking(this.minChunks, datasetSeq ?? undefined)) {
        if (this.stopping) return;
        const started = performance.now();
        if (await this.indexes.build(index)) {
          const ms = Math.round(performance.now() - started);
          this.logger.info({ index: ownIndexName(index), ms }, 'built the vector index of a dataset');
        }
      }
    } catch (error) {
      if (this.stopping) return;
      this.logger.warn(
        { err: error, dataset_seq: datasetSeq ?? undefined },
        'could not build or drop the vector indexes of datasets: tried again at the next document or start',
      );
    }
  }
}
