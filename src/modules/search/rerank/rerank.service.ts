import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { EMBEDDINGS_CONFIG, type EmbeddingsConfig } from 'src/modules/embeddings/embeddings.config.js';
import { RERANK_CONFIG, type RerankConfig } from 'src/modules/search/rerank/rerank.config.js';
import { downloadModel, hasModel } from 'src/modules/embeddings/model-download.js';
import { HttpReranker, LocalCrossEncoder, type Reranker } from 'src/modules/search/rerank/reranker.js';

/** The configured reranker (RERANK_PROVIDER), loaded at start-up; a configured one that fails stops the process. */
@Injectable()
export class RerankService implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private reranker: Reranker | null = null;
  private readonly stopping = new AbortController();

  constructor(
    @Inject(RERANK_CONFIG) private readonly config: RerankConfig,
    @Inject(EMBEDDINGS_CONFIG) private readonly models: EmbeddingsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onModuleInit(): Promise<void> {
    const { provider, model, baseUrl, apiKey } = this.config;
    if (provider === 'local') {
      const { modelsDir, allowDownload, hubUrl } = this.models;
      // Before start-up ends: a reranker that was asked for must work.
      if (allowDownload && !hasModel(modelsDir, model)) {
        await downloadModel({ hubUrl, model, modelsDir, logger: this.logger, signal: this.stopping.signal });
      }
      this.reranker = await LocalCrossEncoder.create({ model, modelsDir }, (err) =>
        this.logger.error(
          { err },
          'the reranking thread ended or could not start again: its searches under way failed; a later one starts another',
        ),
      );
    } else if (provider === 'http') {
      if (!baseUrl) throw new Error('RERANK_PROVIDER=http needs RERANK_BASE_URL');
      this.reranker = new HttpReranker(model, baseUrl, apiKey);
    }
    if (this.reranker) this.logger.info({ provider, model }, 'reranker ready');
  }

  /** A download under way stops (its files are removed). */
  beforeApplicationShutdown(): void {
    this.stopping.abort();
  }

  /** After the HTTP server has closed, so that searches still running finish their reranking. */
  async onApplicationShutdown(): Promise<void> {
    await this.reranker?.close?.();
  }

  current(): Reranker | null {
    return this.reranker;
  }
}
