import { parentPort, workerData } from 'node:worker_threads';
import { embed, loadExtractor, type LocalModelOptions } from 'src/modules/ingestion/embedding/local-model.js';
import { MicroBatcher } from 'src/modules/ingestion/embedding/micro-batcher.js';

/** Queries that arrive while the model runs go together in its next run (one run costs far less than many). */
const MAX_BATCH = 32;

/**
 * The worker thread of `QueryEmbedder`: its own copy of the model, run with one ONNX thread, on
 * batches of the queries waiting (a lone query runs alone, at once). Messages
 * in: `{ id, text }`; out: `{ ready: true }` once loaded, then `{ id, vector }` or `{ id, error }`.
 */
const port = parentPort!;
try {
  const extractor = await loadExtractor({ ...(workerData as LocalModelOptions), threads: 1 });
  const batcher = new MicroBatcher((texts: string[]) => embed(extractor, texts), MAX_BATCH);
  port.on('message', ({ id, text }: { id: number; text: string }) => {
    batcher.submit([text]).then(
      ([vector]) => port.postMessage({ id, vector }),
      (error: unknown) => port.postMessage({ id, error: String(error) }),
    );
  });
  port.postMessage({ ready: true });
} catch (error) {
  port.postMessage({ ready: false, error: String(error) });
}
