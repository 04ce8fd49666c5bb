import type { Tokenizer } from 'src/modules/ingestion/chunking/chunker.js';

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
  /** Counts tokens as the model does (or estimates them, where the model's tokenizer is remote). */
  readonly tokenizer: Tokenizer;
  embedPassages(texts: string[]): Promise<number[][]>;
  embedQuery(text: string): Promise<number[]>;
}

export function l2Normalise(vector: number[]): number[] {
  const norm = Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0));
  return norm === 0 ? vector : vector.map((x) => x / norm);
}
