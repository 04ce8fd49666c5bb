import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FeatureExtractionPipeline } from '@huggingface/transformers';
import type { Tokenizer } from 'src/modules/ingestion/chunking/chunker.js';
import type { EmbeddingProvider } from 'src/modules/ingestion/embedding/embedding-provider.js';
import { embed, loadExtractor } from 'src/modules/ingestion/embedding/local-model.js';
import { MicroBatcher } from 'src/modules/ingestion/embedding/micro-batcher.js';
import { QueryEmbedder } from 'src/modules/ingestion/embedding/query-embedder.js';

export const DEFAULT_LOCAL_MODEL = 'Xenova/bge-small-en-v1.5';
/** BGE's instruction for queries (passages are embedded as they are). */
const BGE_QUERY_PREFIX = 'Represent this sentence for searching relevant passages: ';

/**
 * A sentence-embedding model run in process by ONNX Runtime through @huggingface/transformers: CLS
 * pooling and L2 normalisation, as BGE models are used. Models are read from MODELS_DIR (the layout
 * `<dir>/<owner>/<name>/` with `onnx/model_quantized.onnx`), or fetched from the hub when allowed.
 */
export class LocalEmbeddingProvider implements EmbeddingProvider {
  readonly name = 'local';
  readonly tokenizer: Tokenizer;
  private readonly batcher: MicroBatcher<string, number[]>;

  private constructor(
    private readonly extractor: FeatureExtractionPipeline,
    readonly model: string,
    readonly dimensions: number,
    readonly maxTokens: number,
    batchSize: number,
    private readonly queries: QueryEmbedder | null,
  ) {
    this.batcher = new MicroBatcher(
      (texts) => embed(extractor, texts),
      batchSize,
      (a, b) => a.length - b.length,
    );
    const tokenizer = extractor.tokenizer;
    // Special tokens ([CLS], [SEP]) count against the model's limit as well.
    this.tokenizer = { count: (text) => tokenizer.encode(text).length };
  }

  static async create(options: {
    model: string | null;
    modelsDir: string;
    allowDownload: boolean;
    batchSize: number;
    /** Embed queries in a worker thread (see `QueryEmbedder`); for processes that serve searches. */
    queriesInWorker: boolean;
    /** Told when the worker cannot start; queries are then embedded on the calling thread. */
    onQueryWorkerError?: (error: unknown) => void;
  }): Promise<LocalEmbeddingProvider> {
    const model = options.model ?? DEFAULT_LOCAL_MODEL;
    if (!options.allowDownload && !existsSync(join(options.modelsDir, model))) {
      throw new Error(`model ${model} is not in ${options.modelsDir} and EMBEDDING_ALLOW_DOWNLOAD is off`);
    }
    const source = { model, modelsDir: options.modelsDir, allowDownload: options.allowDownload };
    const extractor = await loadExtractor(source);
    const config = extractor.model.config as { hidden_size?: number; max_position_embeddings?: number };
    const [probe] = await embed(extractor, ['dimension probe']);
    return new LocalEmbeddingProvider(
      extractor,
      model,
      config.hidden_size ?? probe.length,
      config.max_position_embeddings ?? 512,
      options.batchSize,
      options.queriesInWorker
        ? await QueryEmbedder.start(source).catch((error: unknown) => {
            options.onQueryWorkerError?.(error);
            return null;
          })
        : null,
    );
  }

  /**
   * Passages from all concurrent jobs of the process share the model through one micro-batcher, so
   * that it runs full batches (of similar lengths, to pad little) even when each document has only a
   * chunk or two.
   */
  embedPassages(texts: string[]): Promise<number[][]> {
    return this.batcher.submit(texts);
  }

  /** In the worker when there is one and it works, else on this thread. */
  async embedQuery(text: string): Promise<number[]> {
    const input = `${/bge/i.test(this.model) ? BGE_QUERY_PREFIX : ''}${text}`;
    if (this.queries?.alive) return this.queries.embed(input);
    return (await embed(this.extractor, [input]))[0];
  }

  /** The query worker is up and has no query under way (queries on this thread never count). */
  idleForQueries(): boolean {
    return this.queries?.idle ?? false;
  }

  async close(): Promise<void> {
    await this.queries?.close();
  }
}
