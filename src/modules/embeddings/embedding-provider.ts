import type { ExtractedText } from 'src/common/text/extracted-text.js';
import type { Chunk, ChunkingOptions } from 'src/modules/embeddings/chunking/chunker.js';

/**
 * Turns text into vectors. Implementations batch internally as they see fit; the vectors come back
 * in the order of the texts, L2-normalised, each of `dimensions` numbers.
 */
export interface EmbeddingProvider {
  readonly name: 'local' | 'openai';
  readonly model: string;
  readonly dimensions: number;
  /** The most tokens one input may have; longer inputs would be truncated by the model. */
  readonly maxTokens: number;
  /**
   * Cuts a document's text into chunks (see `chunkText`), counting tokens as the model does, or
   * estimating them where the model's tokenizer is remote.
   */
  chunk(text: ExtractedText, options: ChunkingOptions): Promise<Chunk[]>;
  embedPassages(texts: string[]): Promise<number[][]>;
  /** A query's vector; `signal` gives it up while it still waits for the model (see `WorkerThread.call`). */
  embedQuery(text: string, signal?: AbortSignal): Promise<number[]>;
  /**
   * Several queries' vectors, in their order, from one call: present where one call for many costs
   * less than one for each (a remote API's round trip). The local model has none: short queries
   * padded to the longest of a batch take longer together than one at a time (docs/benchmarks.md).
   */
  embedQueries?(texts: string[], signal?: AbortSignal): Promise<number[][]>;
  /**
   * Whether a query embedded now would start at once, delaying no other: only then may a search
   * embed its query before its request has been checked (see EarlyQueryEmbedding). Absent where each
   * call has a price (a remote API): such queries wait for the checks.
   */
  idleForQueries?(): boolean;
}

export function l2Normalise(vector: number[]): number[] {
  const norm = Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0));
  return norm === 0 ? vector : vector.map((x) => x / norm);
}
