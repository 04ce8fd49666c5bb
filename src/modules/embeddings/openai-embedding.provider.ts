import OpenAI from 'openai';
import type { ExtractedText } from 'src/common/text/extracted-text.js';
import {
  type Chunk,
  chunkByEstimate,
  type ChunkingOptions,
} from 'src/modules/embeddings/chunking/chunker.js';
import { type EmbeddingProvider, l2Normalise } from 'src/modules/embeddings/embedding-provider.js';

export const DEFAULT_OPENAI_MODEL = 'text-embedding-3-small';
/** The input limit of OpenAI's embedding models. */
const OPENAI_MAX_TOKENS = 8191;
/** OpenAI accepts up to 2,048 inputs a request; smaller batches keep each request short. */
const OPENAI_BATCH = 128;

/**
 * Any OpenAI-compatible embeddings endpoint (`POST {base}/embeddings`), through the official SDK.
 * The dimension is learned from one probe at start-up, which also proves the endpoint answers.
 */
export class OpenAIEmbeddingProvider implements EmbeddingProvider {
  readonly name = 'openai';
  readonly maxTokens = OPENAI_MAX_TOKENS;

  private constructor(
    private readonly client: OpenAI,
    readonly model: string,
    readonly dimensions: number,
    private readonly requestedDimensions: number | null,
  ) {}

  static async create(options: {
    apiKey: string;
    baseUrl: string | null;
    model: string | null;
    dimensions: number | null;
  }): Promise<OpenAIEmbeddingProvider> {
    const client = new OpenAI({
      apiKey: options.apiKey,
      baseURL: options.baseUrl ?? undefined,
      maxRetries: 2,
      timeout: 30_000,
    });
    const model = options.model ?? DEFAULT_OPENAI_MODEL;
    const probe = new OpenAIEmbeddingProvider(client, model, 0, options.dimensions);
    const [vector] = await probe.request(['dimension probe']);
    return new OpenAIEmbeddingProvider(client, model, vector.length, options.dimensions);
  }

  /** By an estimate of the tokens: the model's tokenizer is remote. */
  chunk(text: ExtractedText, options: ChunkingOptions): Promise<Chunk[]> {
    return chunkByEstimate(text, options);
  }

  async embedPassages(texts: string[]): Promise<number[][]> {
    const vectors: number[][] = [];
    for (let i = 0; i < texts.length; i += OPENAI_BATCH)
      vectors.push(...(await this.request(texts.slice(i, i + OPENAI_BATCH))));
    return vectors;
  }

  async embedQuery(text: string, signal?: AbortSignal): Promise<number[]> {
    return (await this.request([text], signal))[0];
  }

  /** A batch's queries in one request: one round trip instead of one each. */
  embedQueries(texts: string[], signal?: AbortSignal): Promise<number[][]> {
    return this.request(texts, signal);
  }

  private async request(input: string[], signal?: AbortSignal): Promise<number[][]> {
    const response = await this.client.embeddings.create(
      {
        model: this.model,
        input,
        encoding_format: 'float',
        ...(this.requestedDimensions ? { dimensions: this.requestedDimensions } : {}),
      },
      { signal },
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
