import { type BeforeApplicationShutdown, Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import { AppError } from 'src/common/errors/app-error.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';
import { DatasetErrors } from 'src/modules/datasets/datasets.errors.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import { type ReembeddingLock, ReembedRepository } from 'src/modules/embeddings/reembed.repository.js';

const PAGE = 256;

/**
 * Embeds every chunk of a dataset again with the configured provider, and then records its model on
 * the dataset: the way to a new model, and from keyword-only to hybrid. Runs page by page. While it
 * runs, the dataset is marked `reembedding`: the vector leg leaves it out (so that it never ranks two
 * models' vectors together) and chunks indexed meanwhile get no vector; they are embedded once the
 * new model is recorded. Interrupted, the dataset stays keyword-only until the command runs again.
 * One run at a time per dataset: another one started meanwhile is refused (`reembed_in_progress`),
 * and a run whose lock's session ended stops at its next write (`reembed_lock_lost`).
 *
 * A process that processes documents also runs it by itself once a model arrives after start-up (a
 * first start's download): on each dataset indexed keyword-only meanwhile (`catchUp`).
 */
@Injectable()
export class ReembedService implements OnModuleInit, BeforeApplicationShutdown {
  private readonly stopping = new AbortController();
  private catchingUp: Promise<void> = Promise.resolve();

  constructor(
    private readonly repository: ReembedRepository,
    private readonly chunkIndex: ChunkIndexRepository,
    private readonly embedding: EmbeddingService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onModuleInit(): void {
    if (this.config.role === 'api') return;
    this.embedding.onLateProvider(() => {
      this.catchingUp = this.catchUp();
    });
  }

  /** A catch-up under way stops after its current page; its dataset stays keyword-only, as after an interrupted command. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping.abort();
    await this.catchingUp;
  }

  /** Embeds, one after the other, the datasets that have chunks and no model yet. */
  private async catchUp(): Promise<void> {
    for (const datasetId of await this.repository.datasetsWithoutModel()) {
      if (this.stopping.signal.aborted) return;
      try {
        const { chunks } = await this.reembed(datasetId, undefined, this.stopping.signal);
        this.logger.info({ dataset_id: datasetId, chunks }, 'dataset indexed keyword-only is now embedded');
      } catch (error) {
        // Another run has it (the command line, or another process that downloaded the model).
        if (error instanceof AppError && error.code === 'reembed_in_progress') continue;
        if (this.stopping.signal.aborted) return;
        this.logger.warn(
          { err: error, dataset_id: datasetId },
          'could not embed a dataset indexed keyword-only: it stays so until `datasets reembed` runs',
        );
      }
    }
  }

  async reembed(
    datasetId: string,
    onProgress: (done: number) => void = () => undefined,
    signal?: AbortSignal,
  ) {
    const provider = this.embedding.current();
    if (!provider) throw new AppError(400, 'embedding_unavailable', 'No embedding provider is configured');
    const seq = await this.repository.datasetSeq(datasetId);
    if (seq === null) throw DatasetErrors.notFound(datasetId);
    const result = await this.repository.withReembeddingLock(datasetId, (lock) =>
      this.run(lock, seq, provider, onProgress, signal),
    );
    if (!result) {
      throw new AppError(409, 'reembed_in_progress', `Dataset "${datasetId}" is already being re-embedded`, {
        dataset_id: datasetId,
      });
    }
    return result;
  }

  private async run(
    lock: ReembeddingLock,
    seq: string,
    provider: EmbeddingProvider,
    onProgress: (done: number) => void,
    signal: AbortSignal | undefined,
  ) {
    const { datasetId } = lock;
    const stillHeld = (written: boolean) => {
      if (!written) {
        throw new AppError(
          409,
          'reembed_lock_lost',
          `The re-embedding of dataset "${datasetId}" lost its lock (its database session ended) and wrote nothing more; run it again`,
          { dataset_id: datasetId },
        );
      }
    };
    stillHeld(await this.repository.startReembedding(lock));
    let done = 0;
    const embedPage = async (page: { seq: string; content: string }[]) => {
      signal?.throwIfAborted();
      const vectors = await provider.embedPassages(page.map((chunk) => chunk.content));
      stillHeld(
        await this.repository.setEmbeddings(
          lock,
          page.map((chunk) => chunk.seq),
          vectors,
        ),
      );
      done += page.length;
      onProgress(done);
    };
    for (let after = '0'; ;) {
      const page = await this.chunkIndex.chunkPage(seq, after, PAGE);
      if (page.length === 0) break;
      await embedPage(page);
      after = page[page.length - 1].seq;
    }
    // Back into vector search under the new model. Documents indexed while the pages were read got no
    // vectors; their transactions held the dataset's chunk lock, which finishReembedding waits for.
    stillHeld(await this.repository.finishReembedding(lock, provider.model, provider.dimensions));
    for (;;) {
      const page = await this.chunkIndex.chunksWithoutVector(seq, PAGE);
      if (page.length === 0) break;
      await embedPage(page);
    }
    return { dataset_id: datasetId, chunks: done, model: provider.model, dimensions: provider.dimensions };
  }
}
