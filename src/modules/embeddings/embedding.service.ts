import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import type { ExtractedText } from 'src/common/text/extracted-text.js';
import { CORE_CONFIG, type CoreConfig } from 'src/config/core.config.js';
import { type Chunk, chunkByEstimate } from 'src/modules/embeddings/chunking/chunker.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import {
  DEFAULT_LOCAL_MODEL,
  LocalEmbeddingProvider,
} from 'src/modules/embeddings/local-embedding.provider.js';
import { downloadModel, hasModel, removeStaleStaging } from 'src/modules/embeddings/model-download.js';
import {
  OpenAIEmbeddingProvider,
  type PassageRequests,
} from 'src/modules/embeddings/openai-embedding.provider.js';
import { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import { EMBEDDINGS_CONFIG, type EmbeddingsConfig } from 'src/modules/embeddings/embeddings.config.js';

export interface EmbeddingStatus {
  mode: 'hybrid' | 'keyword_only';
  provider: 'local' | 'openai' | null;
  model: string | null;
  dimensions: number | null;
  /** Why there is no provider, when there is none. */
  reason?: string;
}

/**
 * Chooses the embedding provider once, at start-up. `openai` and `local` must work or the process does
 * not start; `none` is keyword-only; `auto` takes OpenAI when a key is set, else the local model when it
 * loads, else runs keyword-only and says so loudly (in the log and in /ready). Never a silent fallback
 * from a provider that was asked for.
 *
 * A local model missing from MODELS_DIR is downloaded when EMBEDDING_ALLOW_DOWNLOAD allows: before
 * start-up ends for `local`, in the background for `auto`, whose process answers keyword-only
 * meanwhile and turns hybrid when the model is loaded (`onProvider` is then told).
 */
@Injectable()
export class EmbeddingService implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private provider: EmbeddingProvider | null = null;
  /** `EMBEDDING_PREVIOUS_MODEL`'s, for the queries of datasets not yet moved from it. */
  private previous: EmbeddingProvider | null = null;
  private reason = '';
  private background: Promise<void> = Promise.resolve();
  private readonly stopping = new AbortController();
  private readonly listeners: ((provider: EmbeddingProvider) => void)[] = [];

  constructor(
    @Inject(EMBEDDINGS_CONFIG) private readonly config: EmbeddingsConfig,
    @Inject(CORE_CONFIG) private readonly core: Pick<CoreConfig, 'role'>,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly chunkIndex: ChunkIndexRepository,
  ) {}

  async onModuleInit(): Promise<void> {
    const options = this.config;
    // Downloads killed half way leave their staging folders; a process that may write there clears them.
    if (options.allowDownload) await removeStaleStaging(options.modelsDir, this.logger);
    switch (options.provider) {
      case 'none':
        this.reason = 'EMBEDDING_PROVIDER=none';
        break;
      case 'openai':
        this.provider = await this.openai();
        break;
      case 'local':
        if (this.mustDownload()) await this.download();
        this.provider = await this.local();
        break;
      case 'auto':
        if (options.openaiApiKey) {
          this.provider = await this.openai();
          break;
        }
        if (this.mustDownload()) {
          this.background = this.downloadInBackground();
          break;
        }
        try {
          this.provider = await this.local();
        } catch (error) {
          this.keywordOnly(`the local model could not be loaded: ${(error as Error).message}`);
        }
        break;
    }
    if (this.provider) await this.ready(this.provider);
    // Only searches use it: a process that serves none has no use for it.
    if (options.previousModel && this.core.role !== 'worker') this.previous = await this.previousOne();
  }

  /**
   * Tells `listener` once, when there is a provider: at once when there is one already (chosen at
   * start-up, or downloaded before the call), else when a downloaded model is loaded; never in a
   * process that stays keyword-only, or that is shutting down when the model loads.
   */
  onProvider(listener: (provider: EmbeddingProvider) => void): void {
    if (this.provider) listener(this.provider);
    else this.listeners.push(listener);
  }

  /** A download under way stops (its files are removed); a model being loaded is waited for. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping.abort();
    await this.background;
  }

  /** After the HTTP server has closed, so that searches still running finish their embeddings. */
  async onApplicationShutdown(): Promise<void> {
    if (this.provider instanceof LocalEmbeddingProvider) await this.provider.close();
    if (this.previous instanceof LocalEmbeddingProvider) await this.previous.close();
  }

  /** The provider, or null when running keyword-only. */
  current(): EmbeddingProvider | null {
    return this.provider;
  }

  /**
   * The provider of vectors of `model` (a dataset's): the current one, or `EMBEDDING_PREVIOUS_MODEL`'s;
   * null when the process has neither of that model.
   */
  forModel(model: { name: string | null; dimensions: number | null }): EmbeddingProvider | null {
    return (
      [this.provider, this.previous].find(
        (provider) => provider && provider.model === model.name && provider.dimensions === model.dimensions,
      ) ?? null
    );
  }

  /**
   * Cuts a document's text into chunks the model takes whole: by the model's own tokenizer when it is
   * local (in its worker thread), by an estimate otherwise.
   */
  chunk(text: ExtractedText): Promise<Chunk[]> {
    const options = {
      maxTokens: this.maxChunkTokens(),
      overlapTokens: this.config.chunkOverlapTokens,
    };
    if (this.provider) return this.provider.chunk(text, options);
    return chunkByEstimate(text, options);
  }

  /** The largest chunk the model takes whole (with a margin for special tokens). */
  private maxChunkTokens(): number {
    const limit = this.provider ? this.provider.maxTokens - 2 : Number.MAX_SAFE_INTEGER;
    return Math.min(this.config.chunkTokens, limit);
  }

  status(): EmbeddingStatus {
    if (!this.provider)
      return { mode: 'keyword_only', provider: null, model: null, dimensions: null, reason: this.reason };
    return {
      mode: 'hybrid',
      provider: this.provider.name,
      model: this.provider.model,
      dimensions: this.provider.dimensions,
    };
  }

  private async ready(provider: EmbeddingProvider): Promise<void> {
    const { name, model, dimensions } = provider;
    await this.chunkIndex.ensureVectorIndex(dimensions);
    this.logger.info({ provider: name, model, dimensions }, 'embedding provider ready');
  }

  private keywordOnly(why: string): void {
    this.reason = `no OPENAI_API_KEY, and ${why}`;
    this.logger.warn(
      { reason: this.reason },
      'NO EMBEDDING PROVIDER: search runs keyword-only (BM25). Set OPENAI_API_KEY or put a model in MODELS_DIR.',
    );
  }

  private localModel(): string {
    return this.config.model ?? DEFAULT_LOCAL_MODEL;
  }

  private mustDownload(): boolean {
    const { allowDownload, modelsDir } = this.config;
    return allowDownload && !hasModel(modelsDir, this.localModel());
  }

  private download(): Promise<void> {
    const { hubUrl, modelsDir } = this.config;
    return downloadModel({
      hubUrl,
      model: this.localModel(),
      modelsDir,
      logger: this.logger,
      signal: this.stopping.signal,
    });
  }

  /** Keyword-only until the model is downloaded and loaded; then hybrid, for every later search and document. */
  private async downloadInBackground(): Promise<void> {
    const model = this.localModel();
    // /ready is open to anyone: the hub's address and the failures' URLs go to the log only.
    this.reason = `the local model ${model} is being downloaded`;
    this.logger.warn(
      { model, hub: this.config.hubUrl },
      'search runs keyword-only (BM25) until the embedding model is downloaded and loaded',
    );
    let provider: LocalEmbeddingProvider | null = null;
    try {
      await this.download();
      provider = await this.local();
      await this.ready(provider);
    } catch (error) {
      await provider?.close();
      if (!this.stopping.signal.aborted) {
        this.logger.error({ err: error, model }, 'the local model could not be downloaded and loaded');
        this.keywordOnly(`the local model ${model} could not be downloaded and loaded (see the log)`);
      }
      return;
    }
    // Loaded while shutting down: the process that would use it is closing (its pool with it).
    if (this.stopping.signal.aborted) {
      await provider.close();
      return;
    }
    this.provider = provider;
    for (const listener of this.listeners.splice(0)) listener(provider);
  }

  /** `EMBEDDING_PREVIOUS_MODEL`'s provider, for queries only; it must load, as an explicit choice. */
  private async previousOne(): Promise<EmbeddingProvider> {
    const { previousProvider, previousModel, previousDimensions, openaiApiKey, openaiBaseUrl } = this.config;
    const provider =
      previousProvider === 'openai'
        ? await OpenAIEmbeddingProvider.create({
            apiKey: openaiApiKey!,
            baseUrl: openaiBaseUrl,
            model: previousModel,
            dimensions: previousDimensions,
            requests: this.passageRequests(),
            logger: this.logger,
          })
        : await this.local(previousModel, { passages: false, queries: true });
    const { model, dimensions } = provider;
    this.logger.info({ provider: provider.name, model, dimensions }, 'previous embedding model ready');
    return provider;
  }

  private openai(): Promise<OpenAIEmbeddingProvider> {
    const { openaiApiKey, openaiBaseUrl, model, dimensions } = this.config;
    if (!openaiApiKey) throw new Error('EMBEDDING_PROVIDER=openai needs OPENAI_API_KEY');
    return OpenAIEmbeddingProvider.create({
      apiKey: openaiApiKey,
      baseUrl: openaiBaseUrl,
      model,
      dimensions,
      requests: this.passageRequests(),
      logger: this.logger,
    });
  }

  private passageRequests(): PassageRequests {
    const { requestBatch, requestTokens, requestConcurrency, rateLimitWaitSeconds } = this.config;
    return {
      batch: requestBatch,
      tokens: requestTokens,
      concurrency: requestConcurrency,
      rateLimitWaitMs: rateLimitWaitSeconds * 1000,
    };
  }

  private local(
    model = this.config.model,
    // A process that only serves searches has only a query thread; one that only processes
    // documents (or runs a CLI command) only a passages' thread.
    threads = { passages: this.core.role !== 'api', queries: this.core.role !== 'worker' },
  ): Promise<LocalEmbeddingProvider> {
    const { modelsDir, batchSize } = this.config;
    return LocalEmbeddingProvider.create({
      model,
      modelsDir,
      batchSize,
      threads,
      onQueryThreadError: (err) =>
        this.logger.warn(
          { err },
          'query embedding thread did not start: queries are embedded in the passages’ thread, behind their batches, until a query starts it again',
        ),
      onThreadFailure: (err) =>
        this.logger.error(
          { err },
          'an embedding thread ended or could not start again: its requests under way failed; it is started again, and queries share the passages’ thread meanwhile',
        ),
    });
  }
}
