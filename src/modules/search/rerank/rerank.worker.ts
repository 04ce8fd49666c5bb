import { workerData } from 'node:worker_threads';
import { AutoModelForSequenceClassification, AutoTokenizer } from '@huggingface/transformers';
import { serveRequests } from 'src/common/threads/worker-thread.js';
import { useModelsFrom } from 'src/modules/embeddings/local-model.js';
import type { CrossEncoderOptions, RerankRequest } from 'src/modules/search/rerank/reranker.js';

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/**
 * The worker thread of `LocalCrossEncoder`: the cross-encoder's tokenizer and model. Each request is
 * one run over the query paired with every passage; the reply is each pair's probability.
 */
await serveRequests<RerankRequest, number[], void>(async () => {
  const options = workerData as CrossEncoderOptions;
  useModelsFrom(options);
  const tokenizer = await AutoTokenizer.from_pretrained(options.model);
  const encoder = await AutoModelForSequenceClassification.from_pretrained(options.model, { dtype: 'q8' });
  return {
    info: undefined,
    async handle({ query, passages }) {
      const inputs = tokenizer(
        passages.map(() => query),
        { text_pair: passages, padding: true, truncation: true },
      );
      const { logits } = (await encoder(inputs)) as { logits: { tolist(): number[][] } };
      return logits.tolist().map((row) => sigmoid(row[0]));
    },
  };
});
