import type { ExtractedText } from 'src/common/text/extracted-text.js';
import { RestartingThread } from 'src/common/threads/worker-thread.js';
import type { Chunk, ChunkingOptions } from 'src/modules/embeddings/chunking/chunker.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import { MicroBatcher } from 'src/modules/embeddings/micro-batcher.js';
import { hasModel } from 'src/modules/embeddings/model-download.js';

/** What a model's worker thread is asked, by operation, and what it answers (see embedding.worker.ts). */
export interface ModelOps {
  embed: { request: { texts: string[] }; reply: number[][] };
  chunk: { request: { text: ExtractedText; options: ChunkingOptions }; reply: Chunk[] };
}
export type ModelRequest = { [Op in keyof ModelOps]: { op: Op } & ModelOps[Op]['request'] }[keyof ModelOps];
export type ModelReply = ModelOps[keyof ModelOps]['reply'];

/** What a model's worker thread reports once its model is loaded. */
export interface LoadedModel {
  dimensions: number;
  /** The most tokens one input may have (the model's position embeddings). */
  maxTokens: number;
}

type ModelThread = RestartingThread<ModelRequest, ModelReply, LoadedModel>;

/** Runs one operation in a model's thread: the thread answers each operation as `ModelOps` says. */
function ask<Op extends keyof ModelOps>(
  thread: ModelThread,
  op: Op,
  request: ModelOps[Op]['request'],
  signal?: AbortSignal,
): Promise<ModelOps[Op]['reply']> {
  return thread.call({ op, ...request } as ModelRequest, signal);
}

const MODEL_SCRIPT = new URL('./embedding.worker.js', import.meta.url);
/** Queries sent on to the query thread before it has answered those before them. */
const QUERIES_IN_FLIGHT = 8;

export const DEFAULT_LOCAL_MODEL = 'Xenova/bge-small-en-v1.5';
/** BGE's instruction for queries (passages are embedded as they are). */
const BGE_QUERY_PREFIX = 'Represent this sentence for searching relevant passages: ';

/**
 * A sentence-embedding model run in process by ONNX Runtime through @huggingface/transformers: CLS
 * pooling and L2 normalisation, as BGE models are used. Models are read from MODELS_DIR (the layout
 * `<dir>/<owner>/<name>/` with `onnx/model_quantized.onnx`), where model-download.ts puts them.
 *
 * The model never runs on the main thread, nor does its tokenizer (see `WorkerThread`). A process that
 * processes documents has a passages' thread, with ONNX Runtime's default threads, which embeds
 * passages and chunks documents; a process that serves searches has a query thread, with one ONNX
 * thread, so that a query never waits behind a batch of passages. Each holds its own copy of the
 * model, and each is started again when it ends (see `RestartingThread`): meanwhile, queries share the
 * passages' thread when the process has one, and wait for the new query thread when it has not. So
 * they do when the query thread could not start beside a passages' thread in the first place.
 */
export class LocalEmbeddingProvider implements EmbeddingProvider {
  readonly name = 'local';
  readonly dimensions: number;
  readonly maxTokens: number;
  /** The passages' thread, or the query thread in a process that only serves searches. */
  private readonly passages: ModelThread;
  private readonly batcher: MicroBatcher<string, number[]>;

  private constructor(
    readonly model: string,
    passages: ModelThread | null,
    private readonly queries: ModelThread | null,
    batchSize: number,
  ) {
    this.passages = (passages ?? queries)!;
    ({ dimensions: this.dimensions, maxTokens: this.maxTokens } = this.passages.info);
    this.batcher = new MicroBatcher((texts) => ask(this.passages, 'embed', { texts }), {
      maxItems: batchSize,
      order: (a, b) => a.length - b.length,
    });
  }

  static async create(options: {
    model: string | null;
    modelsDir: string;
    batchSize: number;
    /** The threads to start: for processing documents, for serving searches, or both. */
    threads: { passages: boolean; queries: boolean };
    /**
     * Told when the query thread cannot start beside a passages' thread: queries then share that
     * thread, and the query thread is started again by a query after a pause (see `RestartingThread`).
     * A process with no passages' thread cannot go without it: `create` fails instead.
     */
    onQueryThreadError: (error: unknown) => void;
    /** Told when a thread ends, or cannot start again (see `RestartingThread`). */
    onThreadFailure: (error: Error) => void;
  }): Promise<LocalEmbeddingProvider> {
    const model = options.model ?? DEFAULT_LOCAL_MODEL;
    if (!hasModel(options.modelsDir, model)) {
      throw new Error(`model ${model} is not in ${options.modelsDir} (EMBEDDING_ALLOW_DOWNLOAD fetches it)`);
    }
    if (!options.threads.passages && !options.threads.queries) {
      throw new Error('a local embedding model needs a thread for passages, for queries, or both');
    }
    const source = { model, modelsDir: options.modelsDir };
    const onFailure = options.onThreadFailure;
    const passages = options.threads.passages
      ? await RestartingThread.start<ModelRequest, ModelReply, LoadedModel>(MODEL_SCRIPT, source, {
          onFailure,
        })
      : null;
    let queries: ModelThread | null = null;
    if (options.threads.queries) {
      // A query runs for a few milliseconds: with several sent on, the thread has the next at hand
      // while the main thread is busy with other requests. Closing waits for these few runs.
      queries = RestartingThread.create<ModelRequest, ModelReply, LoadedModel>(
        MODEL_SCRIPT,
        { ...source, threads: 1 },
        { onFailure, inFlight: QUERIES_IN_FLIGHT },
      );
      try {
        await queries.open();
      } catch (error) {
        if (!passages) throw error;
        // Queries share the passages' thread until one of them starts the query thread again.
        options.onQueryThreadError(error);
      }
    }
    return new LocalEmbeddingProvider(model, passages, queries, options.batchSize);
  }

  /** Counts tokens with the model's own tokenizer, in the passages' thread. */
  chunk(text: ExtractedText, options: ChunkingOptions): Promise<Chunk[]> {
    return ask(this.passages, 'chunk', { text, options });
  }

  /**
   * Passages from all concurrent jobs of the process share the model through one micro-batcher, so
   * that it runs full batches (of similar lengths, to pad little) even when each document has only a
   * chunk or two.
   */
  embedPassages(texts: string[]): Promise<number[][]> {
    return this.batcher.submit(texts);
  }

  /**
   * In the query thread when it is up. When it has ended, or never started, it is started again in the
   * background and the query runs alone in the passages' thread meanwhile; a process without one waits
   * for it.
   */
  async embedQuery(text: string, signal?: AbortSignal): Promise<number[]> {
    const input = `${/bge/i.test(this.model) ? BGE_QUERY_PREFIX : ''}${text}`;
    const queries = this.queries;
    let thread = queries ?? this.passages;
    if (queries && !queries.up && queries !== this.passages) {
      queries.restart(); // in the background: the passages' thread runs this query meanwhile
      thread = this.passages;
    }
    const [vector] = await ask(thread, 'embed', { texts: [input] }, signal);
    return vector;
  }

  /** The query thread is up and has no query under way (queries in the passages' thread never count). */
  idleForQueries(): boolean {
    return this.queries?.idle ?? false;
  }

  async close(): Promise<void> {
    await Promise.all([this.passages.close(), this.queries?.close()]); // one thread may be both
  }
}
