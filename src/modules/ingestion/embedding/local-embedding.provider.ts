import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { env, type FeatureExtractionPipeline, pipeline } from '@huggingface/transformers';
import type { Tokenizer } from 'src/modules/ingestion/chunking/chunker.js';
import type { EmbeddingProvider } from 'src/modules/ingestion/embedding/embedding-provider.js';

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

  private constructor(
    private readonly extractor: FeatureExtractionPipeline,
    readonly model: string,
    readonly dimensions: number,
    readonly maxTokens: number,
    private readonly batchSize: number,
  ) {
    const tokenizer = extractor.tokenizer;
    // Special tokens ([CLS], [SEP]) count against the model's limit as well.
    this.tokenizer = { count: (text) => tokenizer.encode(text).length };
  }

  static async create(options: {
    model: string | null;
    modelsDir: string;
    allowDownload: boolean;
    batchSize: number;
  }): Promise<LocalEmbeddingProvider> {
    const model = options.model ?? DEFAULT_LOCAL_MODEL;
    env.localModelPath = options.modelsDir;
    env.allowLocalModels = true;
    env.allowRemoteModels = options.allowDownload;
    if (!options.allowDownload && !existsSync(join(options.modelsDir, model))) {
      throw new Error(`model ${model} is not in ${options.modelsDir} and EMBEDDING_ALLOW_DOWNLOAD is off`);
    }
    const extractor = await pipeline('feature-extraction', model, { dtype: 'q8' });
    const config = extractor.model.config as { hidden_size?: number; max_position_embeddings?: number };
    const [probe] = await embed(extractor, ['dimension probe']);
    return new LocalEmbeddingProvider(
      extractor,
      model,
      config.hidden_size ?? probe.length,
      config.max_position_embeddings ?? 512,
      options.batchSize,
    );
  }

  /**
   * Batches of similar length, so that little of each batch is padding; the vectors are returned in
   * the order of the input.
   */
  async embedPassages(texts: string[]): Promise<number[][]> {
    const order = texts.map((text, index) => ({ text, index })).sort((a, b) => a.text.length - b.text.length);
    const vectors = new Array<number[]>(texts.length);
    for (let i = 0; i < order.length; i += this.batchSize) {
      const batch = order.slice(i, i + this.batchSize);
      const embedded = await embed(
        this.extractor,
        batch.map((item) => item.text),
      );
      batch.forEach((item, j) => (vectors[item.index] = embedded[j]));
    }
    return vectors;
  }

  async embedQuery(text: string): Promise<number[]> {
    const prefix = /bge/i.test(this.model) ? BGE_QUERY_PREFIX : '';
    return (await embed(this.extractor, [`${prefix}${text}`]))[0];
  }
}

async function embed(extractor: FeatureExtractionPipeline, texts: string[]): Promise<number[][]> {
  const output = await extractor(texts, { pooling: 'cls', normalize: true });
  return output.tolist() as number[][];
}
