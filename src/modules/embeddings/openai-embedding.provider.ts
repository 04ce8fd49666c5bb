import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import type { ExtractedText } from 'src/common/text/extracted-text.js';
import {
  type Chunk,
  chunkByEstimate,
  type ChunkingOptions,
  estimateTokens,
} from 'src/modules/embeddings/chunking/chunker.js';
import { type EmbeddingProvider, l2Normalise } from 'src/modules/embeddings/embedding-provider.js';
import { MicroBatcher } from 'src/modules/embeddings/micro-batcher.js';
import {
  backoffMs,
  rateLimited,
  retryAfterMs,
  type TooLarge,
  tooLarge,
  transient,
} from 'src/modules/embeddings/openai-refusals.js';
import { RequestGate } from 'src/modules/embeddings/request-gate.js';

export const DEFAULT_OPENAI_MODEL = 'text-embedding-3-small';
/** The input limit of OpenAI's embedding models. */
const OPENAI_MAX_TOKENS = 8191;
/** Retries of a passages' request that failed without an answer, or with 408, 409 or 5xx: the SDK's own. */
const TRANSIENT_RETRIES = 2;
/** The longest wait between two 429s that give no `retry-after`. */
const RATE_LIMIT_BACKOFF_CAP_MS = 30_000;
/** Times a passage refused as too long is cut shorter before its batch fails. */
const MAX_TRUNCATIONS = 8;

/** Where the provider says that it slowed down or truncated (the process's logger). */
export interface WarningLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** How passages' requests are made: `EMBEDDING_REQUEST_*` and `EMBEDDING_RATE_LIMIT_WAIT_SECONDS`. */
export interface PassageRequests {
  /** Passages a request holds at most. */
  batch: number;
  /** Estimated tokens a request holds at most (a longer passage goes alone). */
  tokens: number;
  /** Requests in flight at most. */
  concurrency: number;
  /** How long one request waits out 429 answers, in all, before it fails. */
  rateLimitWaitMs: number;
}

/**
 * Any OpenAI-compatible embeddings endpoint (`POST {base}/embeddings`), through the official SDK.
 * The dimension is learned from one probe at start-up, which also proves the endpoint answers.
 *
 * Passages of every document the process embeds at once share requests (a `MicroBatcher`, several
 * in flight), which this class retries itself: a 429 pauses them all (`RequestGate`), and a batch
 * refused as too large is split. Queries go on their own, with the SDK's retries, behind no batch.
 */
export class OpenAIEmbeddingProvider implements EmbeddingProvider {
  readonly name = 'openai';
  readonly maxTokens = OPENAI_MAX_TOKENS;
  private readonly batcher: MicroBatcher<string, number[]>;
  private readonly gate: RequestGate;

  private constructor(
    private readonly client: OpenAI,
    readonly model: string,
    readonly dimensions: number,
    private readonly requestedDimensions: number | null,
    private readonly requests: PassageRequests,
    private readonly logger: WarningLog | null,
  ) {
    this.gate = new RequestGate(requests.concurrency);
    this.batcher = new MicroBatcher((texts) => this.embedBatch(texts), {
      maxItems: requests.batch,
      maxWeight: requests.tokens,
      weight: estimateTokens,
      concurrency: requests.concurrency,
    });
  }

  static async create(options: {
    apiKey: string;
    baseUrl: string | null;
    model: string | null;
    dimensions: number | null;
    requests: PassageRequests;
    logger?: WarningLog;
  }): Promise<OpenAIEmbeddingProvider> {
    const client = new OpenAI({
      apiKey: options.apiKey,
      baseURL: options.baseUrl ?? undefined,
      maxRetries: 2,
      timeout: 30_000,
    });
    const model = options.model ?? DEFAULT_OPENAI_MODEL;
    const { dimensions, requests, logger = null } = options;
    const probe = new OpenAIEmbeddingProvider(client, model, 0, dimensions, requests, logger);
    const [vector] = await probe.request(['dimension probe']);
    return new OpenAIEmbeddingProvider(client, model, vector.length, dimensions, requests, logger);
  }

  /** By an estimate of the tokens: the model's tokenizer is remote. */
  chunk(text: ExtractedText, options: ChunkingOptions): Promise<Chunk[]> {
    return chunkByEstimate(text, options);
  }

  embedPassages(texts: string[]): Promise<number[][]> {
    return this.batcher.submit(texts);
  }

  async embedQuery(text: string, signal?: AbortSignal): Promise<number[]> {
    return (await this.request([text], signal))[0];
  }

  /** A batch's queries in one request: one round trip instead of one each. */
  embedQueries(texts: string[], signal?: AbortSignal): Promise<number[][]> {
    return this.request(texts, signal);
  }

  /** The limits passages' requests are held to now, lowered by the refusals met (for tests). */
  passageLimits(): { maxItems: number; maxWeight: number } {
    return this.batcher.limits();
  }

  /**
   * One batch's vectors: in one request, or in parts when the server refuses it as too large (halves,
   * or pieces of the most inputs it says it takes), down to single passages, cut shorter if need be.
   * Later batches are held to the limit learned, so that a server is not asked too much again.
   */
  private async embedBatch(texts: string[]): Promise<number[][]> {
    let refusal: TooLarge | null;
    try {
      return await this.send(texts);
    } catch (error) {
      refusal = tooLarge(error);
      if (!refusal) throw error;
    }
    if (texts.length === 1) return [await this.embedTruncated(texts[0], refusal)];
    let size = Math.ceil(texts.length / 2);
    if (refusal.kind === 'inputs') {
      if (refusal.maxInputs && refusal.maxInputs < texts.length) size = refusal.maxInputs;
      this.lower({ maxItems: size }, texts.length);
    } else if (refusal.kind === 'request') {
      this.lower({ maxWeight: Math.floor(sum(texts.map(estimateTokens)) / 2) }, texts.length);
    }
    const vectors: number[][] = [];
    for (let i = 0; i < texts.length; i += size)
      vectors.push(...(await this.embedBatch(texts.slice(i, i + size))));
    return vectors;
  }

  private lower(limits: { maxItems?: number; maxWeight?: number }, refused: number): void {
    const before = this.batcher.limits();
    this.batcher.lower(limits);
    const after = this.batcher.limits();
    if (after.maxItems === before.maxItems && after.maxWeight === before.maxWeight) return;
    this.logger?.warn(
      { refused_passages: refused, max_passages: after.maxItems, max_estimated_tokens: after.maxWeight },
      'the embeddings endpoint refused a request as too large: later requests are smaller (see EMBEDDING_REQUEST_BATCH and EMBEDDING_REQUEST_TOKENS)',
    );
  }

  /**
   * A passage the server refuses as too long, embedded from its start, as the local model embeds a
   * passage longer than its window: its text is still indexed whole for keywords.
   */
  private async embedTruncated(text: string, refusal: TooLarge): Promise<number[]> {
    let kept = text.length;
    for (let attempt = 0; attempt < MAX_TRUNCATIONS && kept > 1; attempt++) {
      // With a margin where the server gave the limit, since its tokens are not spread evenly.
      kept = Math.max(
        1,
        Math.floor(kept * (refusal.kind === 'input' && refusal.keep ? refusal.keep * 0.9 : 0.5)),
      );
      const cut = text.slice(0, /[\uD800-\uDBFF]/.test(text[kept - 1] ?? '') ? kept - 1 : kept);
      try {
        const [vector] = await this.send([cut]);
        this.logger?.warn(
          { characters: text.length, embedded_characters: cut.length },
          'a passage too long for the embedding model was embedded truncated',
        );
        return vector;
      } catch (error) {
        const again = tooLarge(error);
        if (!again) throw error;
        refusal = again;
      }
    }
    throw new Error(
      `the embeddings endpoint refused a passage of ${text.length} characters as too large, even cut to ${kept}`,
    );
  }

  /**
   * One passages' request, retried here rather than by the SDK: a 429 is waited out (as long as the
   * answer asks, else with exponential backoff) with every other passages' request paused too, for up
   * to `rateLimitWaitMs` in all; a failure without an answer, 408, 409 or 5xx is retried twice.
   */
  private async send(input: string[]): Promise<number[][]> {
    let limitedSince: number | null = null;
    let limits = 0;
    let failures = 0;
    for (;;) {
      let wait = 0;
      await this.gate.enter();
      try {
        const vectors = await this.request(input, undefined, 0);
        this.gate.succeeded();
        return vectors;
      } catch (error) {
        if (rateLimited(error) === 'wait') {
          limitedSince ??= Date.now();
          const pause = retryAfterMs(error) ?? backoffMs(limits++, RATE_LIMIT_BACKOFF_CAP_MS);
          if (Date.now() + pause - limitedSince > this.requests.rateLimitWaitMs) {
            throw new Error(
              `the embeddings endpoint kept answering 429 (rate limited) for ${Math.round((Date.now() - limitedSince) / 1000)} s, ` +
                `past the ${this.requests.rateLimitWaitMs / 1000} s a request waits`,
              { cause: error },
            );
          }
          if (this.gate.limited(pause))
            this.logger?.warn(
              { wait_ms: Math.round(pause) },
              'the embeddings endpoint is rate limiting: passages wait',
            );
        } else if (transient(error) && failures < TRANSIENT_RETRIES) {
          wait = retryAfterMs(error) ?? backoffMs(failures);
          failures++;
        } else throw error;
      } finally {
        this.gate.leave();
      }
      // A 429's pause is waited for at the gate, with the other requests.
      if (wait > 0) await sleep(wait);
    }
  }

  private async request(input: string[], signal?: AbortSignal, maxRetries?: number): Promise<number[][]> {
    const response = await this.client.embeddings.create(
      {
        model: this.model,
        input,
        encoding_format: 'float',
        ...(this.requestedDimensions ? { dimensions: this.requestedDimensions } : {}),
      },
      { signal, ...(maxRetries === undefined ? {} : { maxRetries }) },
    );
    const issue = answerIssue(response.data, input.length, this.dimensions);
    if (issue) throw new Error(`the embeddings endpoint answered ${issue}`);
    return (
      response.data
        // 0..n-1, as answerIssue has checked.
        .map((item, position) => ({ index: indexOf(item, position) as number, embedding: item.embedding }))
        .sort((a, b) => a.index - b.index)
        .map((item) => l2Normalise(item.embedding))
    );
  }
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/**
 * An item's index: the one it gives, or its place in the list when it gives none. Google's
 * OpenAI-compatible endpoint leaves `index` out where it is 0, as protobuf leaves out default values.
 */
function indexOf(item: { index?: unknown } | null | undefined, position: number): unknown {
  return item?.index ?? position;
}

/**
 * What is wrong with an endpoint's answer, or null. It must hold one vector for each input, indexed
 * 0..n-1 (`indexOf`). The vectors must be finite numbers, all of one length, and of `dimensions` once the probe
 * has learned it (0 while probing). Anything else would be stored beside the wrong chunk, or fail
 * later in PostgreSQL with a less useful message.
 */
function answerIssue(data: unknown, inputs: number, dimensions: number): string | null {
  if (!Array.isArray(data)) return 'no list of embeddings';
  if (data.length !== inputs) return `${data.length} embeddings for ${inputs} inputs`;
  const items = data as { index?: unknown; embedding?: unknown }[];
  const indexes = new Set(items.map(indexOf));
  if (!items.every((_, i) => indexes.has(i))) return 'embeddings not indexed 0 to n - 1';
  const first = items[0]?.embedding;
  const expected = dimensions || (Array.isArray(first) ? first.length : 0);
  for (const { embedding } of items) {
    if (!Array.isArray(embedding) || embedding.length === 0)
      return 'an embedding that is not a list of numbers';
    if (embedding.length !== expected) return `a vector of ${embedding.length} dimensions, not ${expected}`;
    if (!embedding.every((x) => typeof x === 'number' && Number.isFinite(x)))
      return 'a vector holding something other than finite numbers';
  }
  return null;
}
