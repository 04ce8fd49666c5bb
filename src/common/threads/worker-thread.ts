import { parentPort, Worker } from 'node:worker_threads';

type Envelope<Reply> = { id: number; reply: Reply } | { id: number; error: string };
type Ready<Info> = { ready: true; info: Info } | { ready: false; error: string };

const exitError = (code: number) => new Error(`a worker thread exited (code ${code})`);

/**
 * A worker thread that answers requests, one reply for each, for CPU-bound work that must not hold the
 * main thread: ONNX Runtime runs a model synchronously on the calling thread, and tokenising is
 * synchronous JavaScript, so either on the main thread would stop every request of the process for as
 * long as it runs. The script runs `serveRequests`; `Info` is what it reports once it is ready (what
 * it loaded, say).
 */
export class WorkerThread<Request, Reply, Info = void> {
  private readonly pending = new Map<number, { resolve(reply: Reply): void; reject(e: Error): void }>();
  private nextId = 0;
  private failure: Error | null = null;
  /** Called when the last pending request is answered (see `close`). */
  private onIdle: (() => void) | null = null;

  private constructor(
    private readonly worker: Worker,
    readonly info: Info,
  ) {
    worker.on('message', (message: Envelope<Reply>) => {
      const waiting = this.pending.get(message.id);
      if (!waiting) return;
      this.pending.delete(message.id);
      if ('error' in message) waiting.reject(new Error(message.error));
      else waiting.resolve(message.reply);
      if (this.pending.size === 0) this.settled();
    });
    worker.on('error', (error) => this.fail(error));
    worker.on('exit', (code) => this.fail(exitError(code)));
    // The thread keeps the process alive only while a request is under way (see `call`).
    worker.unref();
  }

  /** Starts the script and resolves once it is ready (or rejects with why it could not start). */
  static start<Request, Reply, Info = void>(
    script: URL,
    workerData: unknown,
  ): Promise<WorkerThread<Request, Reply, Info>> {
    const worker = new Worker(script, { workerData });
    return new Promise((resolve, reject) => {
      const exited = (code: number) => reject(exitError(code));
      worker.once('error', reject);
      worker.once('exit', exited);
      worker.once('message', (message: Ready<Info>) => {
        worker.off('error', reject);
        worker.off('exit', exited);
        if (message.ready) resolve(new WorkerThread<Request, Reply, Info>(worker, message.info));
        else void worker.terminate().then(() => reject(new Error(message.error)));
      });
    });
  }

  /** False once the thread has failed or been closed. */
  get alive(): boolean {
    return this.failure === null;
  }

  /** Alive, with nothing under way. */
  get idle(): boolean {
    return this.failure === null && this.pending.size === 0;
  }

  call(request: Request): Promise<Reply> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    if (this.pending.size === 0) this.worker.ref();
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, request });
    });
  }

  /**
   * Refuses new requests, lets those under way finish (for up to `graceMs`), then stops the thread.
   * Terminating a thread in the middle of an ONNX run aborts the whole process.
   */
  async close(graceMs = 5_000): Promise<void> {
    this.failure ??= new Error('the worker thread was closed');
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

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiting of this.pending.values()) waiting.reject(this.failure);
    this.pending.clear();
    this.settled();
  }

  /** Nothing is under way any more. */
  private settled(): void {
    this.worker.unref();
    this.onIdle?.();
  }
}

/**
 * The worker's side of `WorkerThread`: `setup` loads what the requests need and says what it loaded;
 * `handle` then answers each request (an error becomes the rejection of that request alone).
 */
export async function serveRequests<Request, Reply, Info>(
  setup: () => Promise<{ info: Info; handle(request: Request): Reply | Promise<Reply> }>,
): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('serveRequests runs in a worker thread');
  try {
    const served = await setup();
    port.on('message', ({ id, request }: { id: number; request: Request }) => {
      new Promise<Reply>((resolve) => resolve(served.handle(request))).then(
        (reply) => port.postMessage({ id, reply }),
        (error: unknown) => port.postMessage({ id, error: String(error) }),
      );
    });
    port.postMessage({ ready: true, info: served.info });
  } catch (error) {
    port.postMessage({ ready: false, error: String(error) });
  }
}
