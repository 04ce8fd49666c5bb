import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { ChunkVectorsRepository } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { EMBEDDINGS_CONFIG, type EmbeddingsConfig } from 'src/modules/embeddings/embeddings.config.js';
import { ReembedService } from 'src/modules/embeddings/reembed.service.js';
import { DatasetIndexService } from 'src/modules/ingestion/dataset-index.service.js';

/**
 * Builds the re-embeddings requested over the API (`ReembedService.request`) whose model is this
 * process's: at start, and every `REEMBED_POLL_SECONDS`, each such dataset in the order requested,
 * one at a time (a dataset another process builds is left to it, by the re-embedding lock). A build
 * that fails or is stopped by a shutdown is kept where it stopped, and taken up at the next look.
 */
@Injectable()
export class ReembeddingWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly embedding: EmbeddingService,
    private readonly reembed: ReembedService,
    private readonly chunkVectors: ChunkVectorsRepository,
    private readonly datasetIndexes: DatasetIndexService,
    @Inject(EMBEDDINGS_CONFIG) private readonly config: Pick<EmbeddingsConfig, 'reembedPollSeconds'>,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.embedding.onProvider(() => {
      if (this.stopping.signal.aborted) return;
      void this.look();
      this.timer = setInterval(() => void this.look(), this.config.reembedPollSeconds * 1000);
      this.timer.unref();
    });
  }

  /** A build under way stops after its current page; the next start takes it up. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping.abort();
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** Builds the datasets waiting for this process's model; a look under way is the answer. Never rejects. */
  look(): Promise<void> {
    const provider = this.embedding.current();
    if (!provider || this.stopping.signal.aborted) return Promise.resolve();
    this.running ??= this.buildAll(provider).finally(() => (this.running = null));
    return this.running;
  }

  private async buildAll(provider: EmbeddingProvider): Promise<void> {
    try {
      const model = { name: provider.model, dimensions: provider.dimensions };
      for (const datasetId of await this.chunkVectors.datasetsBuilding(model)) {
        if (this.stopping.signal.aborted) return;
        await this.build(datasetId, provider);
      }
    } catch (error) {
      if (!this.stopping.signal.aborted) {
        this.logger.warn({ err: error }, 'could not look for re-embeddings to build: looked for again soon');
      }
    }
  }

  private async build(datasetId: string, provider: EmbeddingProvider): Promise<void> {
    try {
      const result = await this.reembed.build(datasetId, provider, this.stopping.signal);
      if (!result) return; // another process builds it
      this.logger.info(result, 'dataset re-embedded: its searches use the new model');
      // The new dimension's own index, when the dataset is large enough for one.
      const seq = await this.reembed.datasetSeq(datasetId);
      if (seq !== null) void this.datasetIndexes.request(seq);
    } catch (error) {
      if (this.stopping.signal.aborted) return;
      this.logger.warn(
        { err: error, dataset_id: datasetId },
        'a re-embedding stopped: it is taken up where it stopped at the next look',
      );
    }
  }
}
