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
import { ReembedService } from 'src/modules/embeddings/reembed.service.js';
import { DatasetIndexService } from 'src/modules/ingestion/dataset-index.service.js';

/**
 * Chunks indexed keyword-only get their vectors once the process has a provider: at every start with
 * one, when a downloaded model arrives later, and after a document indexed keyword-only while the model
 * was loading. A pass goes through the datasets with chunks without a vector whose vectors are of no
 * other model, one after the other, embedding only those chunks (`ReembedService.embedMissing`, under
 * the re-embedding lock: a dataset another run holds is left to it). Its failures are logged and tried
 * again at the next start; a pass stopped by a shutdown is taken up there too.
 */
@Injectable()
export class VectorCatchUpService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly stopping = new AbortController();
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly embedding: EmbeddingService,
    private readonly reembed: ReembedService,
    private readonly chunkVectors: ChunkVectorsRepository,
    private readonly datasetIndexes: DatasetIndexService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.embedding.onProvider(() => void this.request());
  }

  /** A pass under way stops after its current page; the next start takes it up. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }

  /**
   * Starts a pass, or one more after the pass under way (which may have gone past the dataset of a
   * document indexed meanwhile). Nothing without a provider, or once shutting down. Resolves when
   * the passes are over; it never rejects.
   */
  request(): Promise<void> {
    if (this.stopping.signal.aborted || !this.embedding.current()) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.passes().finally(() => (this.running = null));
    return this.running;
  }

  private async passes(): Promise<void> {
    do {
      this.again = false;
      const provider = this.embedding.current();
      if (provider) await this.pass(provider);
    } while (this.again && !this.stopping.signal.aborted);
  }

  /** Never rejects: an unhandled rejection would end the process. */
  private async pass(provider: EmbeddingProvider): Promise<void> {
    try {
      const model = { name: provider.model, dimensions: provider.dimensions };
      for (const datasetId of await this.chunkVectors.datasetsMissingVectors(model)) {
        if (this.stopping.signal.aborted) return;
        await this.catchUp(datasetId, provider);
      }
    } catch (error) {
      if (this.stopping.signal.aborted) return;
      this.logger.warn(
        { err: error },
        'could not look for chunks indexed keyword-only: they get their vectors at the next start',
      );
    }
  }

  private async catchUp(datasetId: string, provider: EmbeddingProvider): Promise<void> {
    try {
      const chunks = await this.reembed.embedMissing(datasetId, provider, this.stopping.signal);
      // Null: another run holds the dataset (`datasets reembed`, or another process catching up).
      if (chunks) {
        this.logger.info({ dataset_id: datasetId, chunks }, 'dataset indexed keyword-only is now embedded');
        // Its vectors may have made it a large dataset of the dimension: its own index, in the background.
        const seq = await this.reembed.datasetSeq(datasetId);
        if (seq !== null) void this.datasetIndexes.request(seq);
      }
    } catch (error) {
      if (this.stopping.signal.aborted) return;
      this.logger.warn(
        { err: error, dataset_id: datasetId },
        'could not embed the chunks of a dataset indexed keyword-only: they get their vectors at the next start',
      );
    }
  }
}
