import { parentPort, workerData } from 'node:worker_threads';
import { embed, loadExtractor, type LocalModelOptions } from 'src/modules/ingestion/embedding/local-model.js';

/**
 * The worker thread of `QueryEmbedder`: its own copy of the model, run with one ONNX thread, one
 * query at a time: the quantised model scales activations by the whole batch, so a query batched
 * with others would not always get the same vector. Messages
 * in: `{ id, text }`; out: `{ ready: true }` once loaded, then `{ id, vector }` or `{ id, error }`.
 */
const port = parentPort!;
try {
  const extractor = await loadExtractor({ ...(workerData as LocalModelOptions), threads: 1 });
  port.on('message', ({ id, text }: { id: number; text: string }) => {
    embed(extractor, [text]).then(
      ([vector]) => port.postMessage({ id, vector }),
      (error: unknown) => port.postMessage({ id, error: String(error) }),
    );
  });
  port.postMessage({ ready: true });
} catch (error) {
  port.postMessage({ ready: false, error: String(error) });
}
