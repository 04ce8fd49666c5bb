import { RestartingThread } from 'src/common/threads/worker-thread.js';
import { hasModel } from 'src/modules/embeddings/model-download.js';

/** Scores how well each passage answers the query, as a probability in 0..1. */
export interface Reranker {
  readonly name: string;
  readonly model: string;
  /** `signal` gives the scoring up: a run not yet begun never starts, a request is cancelled. */
  score(query: string, passages: string[], signal?: AbortSignal): Promise<number[]>;
  close?(): Promise<void>;
}

export interface CrossEncoderOptions {
  model: string;
  modelsDir: string;
}

/** What the cross-encoder's worker thread is asked (see rerank.worker.ts). */
export interface RerankRequest {
  query: string;
  passages: string[];
}

/**
 * A cross-encoder (one relevance logit per pair) run in process, e.g. ms-marco-MiniLM-L-6-v2, in a
 * worker thread: a run over 20 passages takes hundreds of milliseconds, which on the main thread
 * every other request of the process would wait for.
 */
export class LocalCrossEncoder implements Reranker {
  readonly name = 'local';

  private constructor(
    readonly model: string,
    private readonly thread: RestartingThread<RerankRequest, number[]>,
  ) {}

  /** `onFailure` is told when the thread ends, or cannot start again; a later search starts another. */
  static async create(
    options: CrossEncoderOptions,
    onFailure: (error: Error) => void,
  ): Promise<LocalCrossEncoder> {
    if (!hasModel(options.modelsDir, options.model)) {
      throw new Error(
        `reranker ${options.model} is not in ${options.modelsDir} (EMBEDDING_ALLOW_DOWNLOAD fetches it)`,
      );
    }
    const thread = await RestartingThread.start<RerankRequest, number[]>(
      new URL('./rerank.worker.js', import.meta.url),
      options,
      { onFailure },
    );
    return new LocalCrossEncoder(options.model, thread);
  }

  score(query: string, passages: string[], signal?: AbortSignal): Promise<number[]> {
    if (passages.length === 0) return Promise.resolve([]);
    return this.thread.call({ query, passages }, signal);
  }

  /** Lets a run under way finish, then stops the thread. */
  close(): Promise<void> {
    return this.thread.close();
  }
}

/** A third-party rerank API of Cohere's shape: `POST {base}/v1/rerank` → `results[{index, relevance_score}]`. */
export class HttpReranker implements Reranker {
  readonly name = 'http';

  constructor(
    readonly model: string,
    private readonly baseUrl: string,
    private readonly apiKey: string | null,
    private readonly timeoutMs = 5_000,
  ) {}

  async score(query: string, passages: string[], signal?: AbortSignal): Promise<number[]> {
    if (passages.length === 0) return [];
    const response = await fetch(`${this.baseUrl.replace(/\/+$/, '')}/v1/rerank`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        ...(this.apiKey ? { Authorization: `Bearer ${this.apiKey}` } : {}),
      },
      body: JSON.stringify({ model: this.model, query, documents: passages, top_n: passages.length }),
      signal: signal
        ? AbortSignal.any([signal, AbortSignal.timeout(this.timeoutMs)])
        : AbortSignal.timeout(this.timeoutMs),
    });
    if (!response.ok) throw new Error(`rerank API answered ${response.status}`);
    return scoresOf(await response.json(), passages.length);
  }
}

/**
 * The scores of a rerank API's answer, in the passages' order. The answer must score every passage
 * once, each with a relevance in 0..1 (the score it becomes is one); anything else fails the rerank
 * (502 rerank_failed) rather than give a passage 0, or a score outside the contract's range.
 */
function scoresOf(body: unknown, count: number): number[] {
  const results = (body as { results?: unknown } | null)?.results;
  if (!Array.isArray(results) || results.length !== count)
    throw new Error(
      `rerank API scored ${Array.isArray(results) ? results.length : 'no'} of ${count} passages`,
    );
  const scores = new Array<number | undefined>(count);
  for (const result of results as unknown[]) {
    const { index, relevance_score: score } = (result ?? {}) as {
      index?: unknown;
      relevance_score?: unknown;
    };
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= count)
      throw new Error(`rerank API answered an unknown passage index ${String(index)}`);
    if (scores[index] !== undefined) throw new Error(`rerank API scored passage ${index} twice`);
    if (typeof score !== 'number' || !(score >= 0 && score <= 1))
      throw new Error(`rerank API answered relevance ${String(score)} for passage ${index}, not 0..1`);
    scores[index] = score;
  }
  return scores as number[];
}
