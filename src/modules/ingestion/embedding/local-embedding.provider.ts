import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { RestartingThread, WorkerThread } from 'src/common/threads/worker-thread.js';
import type { Chunk, ChunkingOptions } from 'src/modules/ingestion/chunking/chunker.js';
import type { EmbeddingProvider } from 'src/modules/ingestion/embedding/embedding-provider.js';
import { MicroBatcher } from 'src/modules/ingestion/embedding/micro-batcher.js';
import type { ExtractedText } from 'src/modules/ingestion/extraction/extracted-text.js';

/** What a model's worker thread is asked (see embedding.worker.ts). */
export type ModelRequest =
  { op: 'embed'; texts: string[] } | { op: 'chunk'; text: ExtractedText; options: ChunkingOptions };

/** What a model's worker thread reports once its model is loaded. */
export interface LoadedModel {
  dimensions: number;
  /** The most tokens one input may have (the model's position embeddings). */
  maxTokens: number;
}

type ModelReply = number[][] | Chunk[];
const MODEL_SCRIPT = new URL('./embedding.worker.js', import.meta.url);
/** Queries sent on to the query thread before it has answered those before them. */
const QUERIES_IN_FLIGHT = 8;

export const DEFAULT_LOCAL_MODEL = 'Xenova/bge-small-en-v1.5';
/** BGE's instruction for queries (passages are embedded as they are). */
const BGE_QUERY_PREFIX = 'Represent this sentence for searching relevant passages: ';

/**
 * A sentence-embedding model run in process by ONNX Runtime through @huggingface/transformers: CLS
 * pooling and L2 normalisation, as BGE models are used. Models are read from MODELS_DIR (the layout
 * `<dir>/<owner>/<name>/` with `onnx/model_quantized.onnx`), or fetched from the hub when allowed.
 *
 * The model never runs on the main thread, nor does its tokenizer (see `WorkerThread`): passages are
 * embedded, and documents chunked, in one worker thread, with ONNX Runtime's default threads; in
 * processes that serve searches, queries have a worker thread of their own, with one ONNX thread, so
 * that a query never waits behind a batch of passages.
 */
export class LocalEmbeddingProvider implements EmbeddingProvider {
  readonly name = 'local';
  readonly dimensions: number;
  readonly maxTokens: number;
  private readonly batcher: MicroBatcher<string, number[]>;

  private constructor(
    readonly model: string,
    private readonly passages: RestartingThread<ModelRequest, ModelReply, LoadedModel>,
    private readonly queries: WorkerThread<ModelRequest, ModelReply, LoadedModel> | null,
    batchSize: number,
  ) {
    ({ dimensions: this.dimensions, maxTokens: this.maxTokens } = passages.info);
    this.batcher = new MicroBatcher(
      (texts) => passages.call({ op: 'embed', texts }) as Promise<number[][]>,
      batchSize,
      (a, b) => a.length - b.length,
    );
  }

  static async create(options: {
    model: string | null;
    modelsDir: string;
    allowDownload: boolean;
    batchSize: number;
    /** Embed queries in a worker thread of their own; for processes that serve searches. */
    queriesInWorker: boolean;
    /** Told when the query thread cannot start; queries then share the passages' thread. */
    onQueryWorkerError: (error: unknown) => void;
    /** Told when a thread that had started ends (the passages' thread is then started again). */
    onThreadFailure: (error: Error) => void;
  }): Promise<LocalEmbeddingProvider> {
    const model = options.model ?? DEFAULT_LOCAL_MODEL;
    if (!options.allowDownload && !existsSync(join(options.modelsDir, model))) {
      throw new Error(`model ${model} is not in ${options.modelsDir} and EMBEDDING_ALLOW_DOWNLOAD is off`);
    }
    const source = { model, modelsDir: options.modelsDir, allowDownload: options.allowDownload };
    const onFailure = options.onThreadFailure;
    const passages = await RestartingThread.start<ModelRequest, ModelReply, LoadedModel>(
      MODEL_SCRIPT,
      source,
      { onFailure },
    );
    // A query runs for a few milliseconds: with several sent on, the thread has the next at hand
    // while the main thread is busy with other requests. Closing waits for these few runs.
    const queries = options.queriesInWorker
      ? await WorkerThread.start<ModelRequest, ModelReply, LoadedModel>(
          MODEL_SCRIPT,
          { ...source, threads: 1 },
          { onFailure, inFlight: QUERIES_IN_FLIGHT },
        ).catch((error: unknown) => {
          options.onQueryWorkerError(error);
          return null;
        })
      : null;
    return new LocalEmbeddingProvider(model, passages, queries, options.batchSize);
  }

  /** Counts tokens with the model's own tokenizer, in the passages' thread. */
  chunk(text: ExtractedText, options: ChunkingOptions): Promise<Chunk[]> {
    return this.passages.call({ op: 'chunk', text, options }) as Promise<Chunk[]>;
  }

  /**
   * Passages from all concurrent jobs of the process share the model through one micro-batcher, so
   * that it runs full batches (of similar lengths, to pad little) even when each document has only a
   * chunk or two.
   */
  embedPassages(texts: string[]): Promise<number[][]> {
    return this.batcher.submit(texts);
  }

  /** In the query thread when there is one and it works, else alone in the passages' thread. */
  async embedQuery(text: string): Promise<number[]> {
    const input = `${/bge/i.test(this.model) ? BGE_QUERY_PREFIX : ''}${text}`;
    const thread = this.queries?.alive ? this.queries : this.passages;
    const [vector] = (await thread.call({ op: 'embed', texts: [input] })) as number[][];
    return vector;
  }

  /** The query thread is up and has no query under way (queries in the passages' thread never count). */
  idleForQueries(): boolean {
    return this.queries?.idle ?? false;
  }

  async close(): Promise<void> {
    await Promise.all([this.passages.close(), this.queries?.close()]);
  }
}
