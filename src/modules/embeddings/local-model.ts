import { env, type FeatureExtractionPipeline, pipeline } from '@huggingface/transformers';

export interface LocalModelOptions {
  model: string;
  modelsDir: string;
  /** ONNX Runtime threads for one run of the model; the runtime's default when absent. */
  threads?: number;
}

/**
 * Points @huggingface/transformers, for the thread that calls it, at the models directory and never at
 * the hub: models are fetched by model-download.ts, which checks every file before it is loaded.
 */
export function useModelsFrom(options: { modelsDir: string }): void {
  env.localModelPath = options.modelsDir;
  env.allowLocalModels = true;
  env.allowRemoteModels = false;
}

/** Loads a sentence-embedding model (quantised ONNX) through @huggingface/transformers. */
export function loadExtractor(options: LocalModelOptions): Promise<FeatureExtractionPipeline> {
  useModelsFrom(options);
  return pipeline('feature-extraction', options.model, {
    dtype: 'q8',
    ...(options.threads ? { session_options: { intraOpNumThreads: options.threads } } : {}),
  });
}

/** CLS pooling and L2 normalisation, as BGE models are used. */
export async function embed(extractor: FeatureExtractionPipeline, texts: string[]): Promise<number[][]> {
  const output = await extractor(texts, { pooling: 'cls', normalize: true });
  return output.tolist() as number[][];
}
