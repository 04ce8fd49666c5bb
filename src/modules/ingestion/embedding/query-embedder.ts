import { Worker } from 'node:worker_threads';
import type { LocalModelOptions } from 'src/modules/ingestion/embedding/local-model.js';

type Reply = { id: number; vector: number[] } | { id: number; error: string };

const exitError = (code: number) => new Error(`the query embedding worker exited (code ${code})`);

/**
 * Embeds queries in a worker thread. ONNX Runtime runs a model synchronously on the calling thread,
 * so a query embedded on the main thread would stop every other request for the length of the run,
 * the keyword leg of the same search included. In a worker, the two legs of a search overlap, on
 * the two cores they have. The worker's model runs with one thread: a single short query gains
 * nothing from a second one, and the other core is the database's and the main thread's.
 */
export class QueryEmbedder {
  private readonly pending = new Map<number, { resolve(v: number[]): void; reject(e: Error): void }>();
  private nextId = 0;
  private failure: Error | null = null;
  /** Called when the last pending query is answered (see `close`). */
  private onIdle: (() => void) | null = null;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (reply: Reply) => {
      const waiting = this.pending.get(reply.id);
      if (!waiting) return;
      this.pending.delete(reply.id);
      if ('error' in reply) waiting.reject(new Error(reply.error));
      else waiting.resolve(reply.vector);
      if (this.pending.size === 0) this.onIdle?.();
    });
    worker.on('error', (error) => this.fail(error));
    worker.on('exit', (code) => this.fail(exitError(code)));
    // The worker must not keep a process alive that has nothing else left to do.
    worker.unref();
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiting of this.pending.values()) waiting.reject(this.failure);
    this.pending.clear();
    this.onIdle?.();
  }

  /** Starts the worker and resolves once its model is loaded (or rejects with why it did not load). */
  static start(options: LocalModelOptions): Promise<QueryEmbedder> {
    const worker = new Worker(new URL('./query-embedding.worker.js', import.meta.url), {
      workerData: options,
    });
    return new Promise((resolve, reject) => {
      const exited = (code: number) => reject(exitError(code));
      worker.once('error', reject);
      worker.once('exit', exited);
      worker.once('message', (message: { ready: boolean; error?: string }) => {
        worker.off('error', reject);
        worker.off('exit', exited);
        if (message.ready) resolve(new QueryEmbedder(worker));
        else void worker.terminate().then(() => reject(new Error(message.error)));
      });
    });
  }

  /** False once the worker has failed; the provider then embeds queries on its own thread. */
  get alive(): boolean {
    return this.failure === null;
  }

  /** Alive, with no query under way. */
  get idle(): boolean {
    return this.failure === null && this.pending.size === 0;
  }

  embed(text: string): Promise<number[]> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, text });
    });
  }

  /**
   * Refuses new queries, lets those under way finish (for up to `graceMs`), then stops the worker.
   * Terminating a worker in the middle of an ONNX run aborts the whole process.
   */
  async close(graceMs = 5_000): Promise<void> {
    this.failure ??= new Error('the query embedding worker was closed');
    if (this.pending.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        this.onIdle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.fail(this.failure);
    await this.worker.terminate();
  }
}
