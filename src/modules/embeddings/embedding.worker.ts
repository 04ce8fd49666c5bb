import { join } from 'node:path';
import { workerData } from 'node:worker_threads';
import { serveRequests } from 'src/common/threads/worker-thread.js';
import { chunkText } from 'src/modules/embeddings/chunking/chunker.js';
import { embed, loadExtractor, type LocalModelOptions } from 'src/modules/embeddings/local-model.js';
import { isStaticModelDir, loadStaticModel } from 'src/modules/embeddings/static-model.js';
import type {
  LoadedModel,
  ModelReply,
  ModelRequest,
} from 'src/modules/embeddings/local-embedding.provider.js';

/**
 * A worker thread of `LocalEmbeddingProvider`, with its own copy of the model: a transformer run by
 * ONNX Runtime, or a static model (Model2Vec), whose `embed` is a table lookup per token. An `embed`
 * request is one run of the model over its texts: the caller decides what goes together (the quantised model scales
 * activations by the whole batch, so a query is run alone, to get the same vector every time). A
 * `chunk` request cuts a document's text by the model's own tokenizer, which is synchronous
 * JavaScript too, and would hold the main thread as long.
 */
await serveRequests<ModelRequest, ModelReply, LoadedModel>(async () => {
  const options = workerData as LocalModelOptions;
  const dir = join(options.modelsDir, options.model);
  if (isStaticModelDir(dir)) {
    const model = loadStaticModel(dir);
    const counter = { count: model.countTokens };
    return {
      info: { dimensions: model.dimensions, maxTokens: model.maxTokens },
      handle: (request: ModelRequest) =>
        request.op === 'embed'
          ? Promise.resolve(model.embed(request.texts))
          : chunkText(request.text, counter, request.options),
    };
  }
  const extractor = await loadExtractor(options);
  const config = extractor.model.config as { hidden_size?: number; max_position_embeddings?: number };
  const [probe] = await embed(extractor, ['dimension probe']);
  const tokenizer = extractor.tokenizer;
  // Special tokens ([CLS], [SEP]) count against the model's limit as well.
  const counter = { count: (text: string) => tokenizer.encode(text).length };
  return {
    info: {
      dimensions: config.hidden_size ?? probe.length,
      maxTokens: config.max_position_embeddings ?? 512,
    },
    handle: (request: ModelRequest) =>
      request.op === 'embed'
        ? embed(extractor, request.texts)
        : chunkText(request.text, counter, request.options),
  };
});
