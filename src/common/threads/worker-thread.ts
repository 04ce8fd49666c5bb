import { types } from 'node:util';
import { parentPort, type ResourceLimits, Worker } from 'node:worker_threads';

type Envelope<Reply> = { id: number; reply: Reply } | { id: number; error: unknown };
type Ready<Info> = { ready: true; info: Info } | { ready: false; error: unknown };

interface Pending<Request, Reply> {
  id: number;
  request: Request;
  resolve(reply: Reply): void;
  reject(error: Error): void;
}

const exitError = (code: number) => new Error(`a worker thread exited (code ${code})`);

/**
 * An error as it came across the thread boundary: Node clones an Error with its name, message and
 * stack (`isNativeError`, as it may belong to another realm than this module's `Error`).
 */
export const asError = (error: unknown) => (types.isNativeError(error) ? error : new Error(String(error)));

export interface ThreadOptions {
  /**
   * Told when the thread ends other than by `close` (an uncaught error, out of its heap), and, for a
   * `RestartingThread`, when a thread it starts again cannot start.
   */
  onFailure?: (error: Error) => void;
  /**
   * Requests sent on before the thread has answered the ones before them (default 1). More keeps a
   * thread of short runs busy while the main thread, which sends the next, is busy itself.
   */
  inFlight?: number;
  /** The thread's own heap limits: past them the thread ends (`ERR_WORKER_OUT_OF_MEMORY`), not its process. */
  resourceLimits?: ResourceLimits;
  /** How long the script may take to be ready (no limit when absent: a model may take long to load). */
  startTimeoutMs?: number;
}

/**
 * A worker thread that answers requests, one reply for each, for CPU-bound work that must not hold the
 * main thread: ONNX Runtime runs a model synchronously on the calling thread, and tokenising is
 * synchronous JavaScript, so either on the main thread would stop every request of the process for as
 * long as it runs. The script runs `serveRequests`; `Info` is what it reports once it is ready (what
 * it loaded, say).
 *
 * At most `inFlight` requests are sent to the thread at a time, the others waiting here: the thread
 * runs one at a time anyway, and so closing it waits for those runs, never for a queue.
 */
export class WorkerThread<Request, Reply, Info = void> {
  private readonly queue: Pending<Request, Reply>[] = [];
  private readonly running = new Map<number, Pending<Request, Reply>>();
  private readonly inFlight: number;
  private nextId = 0;
  private failure: Error | null = null;
  private closing: Promise<void> | null = null;
  /** Called when a request under way is answered (see `close`). */
  private onSettled: (() => void) | null = null;

  private constructor(
    private readonly worker: Worker,
    readonly info: Info,
    private readonly options: ThreadOptions,
  ) {
    this.inFlight = Math.max(1, options.inFlight ?? 1);
    worker.on('message', (message: Envelope<Reply>) => {
      const pending = this.running.get(message.id);
      if (!pending) return;
      this.running.delete(message.id);
      if ('error' in message) pending.reject(asError(message.error));
      else pending.resolve(message.reply);
      this.onSettled?.();
      this.next();
    });
    worker.on('error', (error: Error) => this.fail(error));
    worker.on('exit', (code) => this.fail(exitError(code)));
    // The thread keeps the process alive only while a request is under way (see `next`).
    worker.unref();
  }

  /**
   * Starts the script and resolves once it is ready, or rejects with why it could not start (by
   * `options.startTimeoutMs` at the latest, if given: the thread is then stopped).
   */
  static async start<Request, Reply, Info = void>(
    script: URL,
    workerData: unknown,
    options: ThreadOptions = {},
  ): Promise<WorkerThread<Request, Reply, Info>> {
    const worker = new Worker(script, { workerData, resourceLimits: options.resourceLimits });
    let timer: NodeJS.Timeout | undefined;
    const starting = new Promise<WorkerThread<Request, Reply, Info>>((resolve, reject) => {
      const exited = (code: number) => reject(exitError(code));
      worker.on('error', reject); // a no-op once settled, and an 'error' must always have a listener
      worker.once('exit', exited);
      const ready = (message: Ready<Info>) => {
        worker.off('exit', exited);
        if (message.ready) {
          worker.off('error', reject);
          resolve(new WorkerThread<Request, Reply, Info>(worker, message.info, options));
        } else void worker.terminate().then(() => reject(asError(message.error)));
      };
      worker.once('message', ready);
      if (options.startTimeoutMs !== undefined) {
        const ms = options.startTimeoutMs;
        timer = setTimeout(() => {
          worker.off('message', ready);
          reject(new Error(`a worker thread did not start within ${ms} ms`));
          void worker.terminate();
        }, ms);
      }
    });
    return starting.finally(() => clearTimeout(timer));
  }

  /** False once the thread has failed or been closed. */
  get alive(): boolean {
    return this.failure === null;
  }

  /** Alive, with nothing under way or waiting. */
  get idle(): boolean {
    return this.failure === null && this.running.size === 0 && this.queue.length === 0;
  }

  /**
   * The thread's reply to `request`. When `signal` aborts while the request still waits here, it is
   * dropped, rejected with the signal's reason, and never run: whoever asked has given up (a search
   * past its deadline), and the thread's time goes to those still waiting. A request already sent
   * to the thread runs to its end.
   */
  call(request: Request, signal?: AbortSignal): Promise<Reply> {
    if (this.failure) return Promise.reject(this.failure);
    if (signal?.aborted) return Promise.reject(asError(signal.reason));
    return new Promise((resolve, reject) => {
      const pending: Pending<Request, Reply> = { id: this.nextId++, request, resolve, reject };
      if (signal) {
        const abandon = () => {
          const waiting = this.queue.indexOf(pending);
          if (waiting >= 0) {
            this.queue.splice(waiting, 1);
            reject(asError(signal.reason));
          }
        };
        signal.addEventListener('abort', abandon, { once: true });
        pending.resolve = (reply) => {
          signal.removeEventListener('abort', abandon);
          resolve(reply);
        };
        pending.reject = (error) => {
          signal.removeEventListener('abort', abandon);
          reject(error);
        };
      }
      this.queue.push(pending);
      this.next();
    });
  }

  /**
   * Refuses new requests and those still waiting, lets those under way finish (for up to `graceMs`),
   * then stops the thread. Terminating a thread in the middle of an ONNX run aborts the whole process.
   */
  close(graceMs = 30_000): Promise<void> {
    this.closing ??= this.shutDown(graceMs);
    return this.closing;
  }

  /**
   * Stops the thread at once, in the middle of whatever it runs: what is under way or waiting fails
   * with `reason`. For work that may be cut off (a document's extraction); never for an ONNX run,
   * whose interruption aborts the process (see `close`).
   */
  async terminate(reason: Error): Promise<void> {
    this.failure ??= reason;
    this.end();
    await this.worker.terminate();
  }

  private async shutDown(graceMs: number): Promise<void> {
    this.failure ??= new Error('the worker thread was closed');
    this.rejectWaiting(this.failure);
    if (this.running.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        this.onSettled = () => {
          if (this.running.size > 0) return;
          clearTimeout(timer);
          resolve();
        };
      });
    }
    this.end();
    await this.worker.terminate();
  }

  /** Sends waiting requests while fewer than `inFlight` are under way. */
  private next(): void {
    while (!this.failure && this.running.size < this.inFlight && this.queue.length > 0) {
      const pending = this.queue.shift()!;
      this.running.set(pending.id, pending);
      try {
        this.worker.postMessage({ id: pending.id, request: pending.request });
      } catch (error) {
        // A request that cannot be cloned fails alone.
        this.running.delete(pending.id);
        pending.reject(asError(error));
      }
    }
    if (this.running.size > 0) this.worker.ref();
    else this.worker.unref();
  }

  private fail(error: Error): void {
    if (!this.failure) {
      this.failure = error;
      this.options.onFailure?.(error);
    }
    this.end();
  }

  /** Rejects whatever is under way or waiting, with the failure (or the closing). */
  private end(): void {
    if (!this.failure) return;
    for (const pending of this.running.values()) pending.reject(this.failure);
    this.running.clear();
    this.rejectWaiting(this.failure);
    this.worker.unref();
    this.onSettled?.();
  }

  private rejectWaiting(error: Error): void {
    for (const waiting of this.queue.splice(0)) waiting.reject(error);
  }
}

/** How long a thread that could not start is left down before the next try, at first and at most. */
const RETRY_MS = { first: 1_000, most: 60_000 };

/**
 * A `WorkerThread` started again, with the same script, after it has failed (a thread can end without
 * its process: out of its own heap, say), so that one failure costs the requests under way and not
 * every later one. A request waits for the new thread; `restart` starts one in the background, for a
 * caller that has somewhere else to send its requests meanwhile. A start that fails is reported
 * (`onFailure`) and fails the requests waiting for it; the next is tried only after a pause, doubling
 * from one second to a minute, so that a thread that cannot start (the memory is gone, say) is not
 * started again for every request. Closing it closes whichever thread it has.
 */
export class RestartingThread<Request, Reply, Info = void> {
  /** The thread started last, once one has started (it may have ended since). */
  private thread: WorkerThread<Request, Reply, Info> | null = null;
  private starting: Promise<WorkerThread<Request, Reply, Info>> | null = null;
  /** Why the last start failed, and when the next may be tried. */
  private startFailure: { error: Error; retryAt: number; pauseMs: number } | null = null;
  private closed = false;

  private constructor(
    private readonly startThread: () => Promise<WorkerThread<Request, Reply, Info>>,
    private readonly onFailure: ((error: Error) => void) | undefined,
  ) {}

  /** Starts the first thread; its failure to start is the caller's. */
  static async start<Request, Reply, Info = void>(
    script: URL,
    workerData: unknown,
    options: ThreadOptions = {},
  ): Promise<RestartingThread<Request, Reply, Info>> {
    const thread = RestartingThread.create<Request, Reply, Info>(script, workerData, options);
    await thread.open();
    return thread;
  }

  /** One with no thread yet: `open` starts the first (so would a request, or `restart`). */
  static create<Request, Reply, Info = void>(
    script: URL,
    workerData: unknown,
    options: ThreadOptions = {},
  ): RestartingThread<Request, Reply, Info> {
    return new RestartingThread(
      () => WorkerThread.start<Request, Reply, Info>(script, workerData, options),
      options.onFailure,
    );
  }

  /**
   * Starts the first thread and waits for it. Its failure is the caller's to report (`onFailure` is
   * not told): the caller may go on without the thread, which a later request or `restart` starts
   * again after the first pause.
   */
  async open(): Promise<void> {
    await this.live({ first: true });
  }

  /** What the thread started last reported when it was ready. */
  get info(): Info {
    if (!this.thread) throw new Error('no worker thread has started yet');
    return this.thread.info;
  }

  /** A thread is running (none is while it is being started again). */
  get up(): boolean {
    return this.thread?.alive ?? false;
  }

  /** A thread is running, with nothing under way or waiting. */
  get idle(): boolean {
    return this.thread?.idle ?? false;
  }

  /**
   * As `WorkerThread.call`, once a thread is running; a request whose signal aborts while a thread
   * starts is dropped then (the start goes on, for the requests after it).
   */
  async call(request: Request, signal?: AbortSignal): Promise<Reply> {
    return (await untilAborted(this.live(), signal)).call(request, signal);
  }

  /** Starts a new thread in the background when none is running (and none is being started). */
  restart(): void {
    this.live().catch(() => undefined); // a failed start is reported by `live` (or is `open`'s)
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([
      this.thread?.close(),
      this.starting?.then(
        (thread) => thread.close(),
        () => undefined,
      ),
    ]);
  }

  private live({ first = false } = {}): Promise<WorkerThread<Request, Reply, Info>> {
    if (this.closed) return Promise.reject(new Error('the worker thread was closed'));
    if (this.thread?.alive) return Promise.resolve(this.thread);
    if (this.starting) return this.starting;
    const failure = this.startFailure;
    if (failure && performance.now() < failure.retryAt) return Promise.reject(failure.error);
    this.starting = this.startThread().then(
      async (thread) => {
        this.startFailure = null;
        if (this.closed) {
          await thread.close();
          throw new Error('the worker thread was closed');
        }
        this.thread = thread;
        return thread;
      },
      (cause: unknown) => {
        const pauseMs = failure ? Math.min(2 * failure.pauseMs, RETRY_MS.most) : RETRY_MS.first;
        const error = first
          ? asError(cause)
          : new Error(`a worker thread could not start again: ${asError(cause).message}`, { cause });
        this.startFailure = { error, retryAt: performance.now() + pauseMs, pauseMs };
        if (!first && !this.closed) this.onFailure?.(error);
        throw error;
      },
    );
    void this.starting.finally(() => (this.starting = null)).catch(() => undefined);
    return this.starting;
  }
}

/** `work`'s outcome, or the signal's reason if it aborts first (the work itself goes on). */
function untilAborted<T>(work: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(asError(signal.reason));
  return new Promise<T>((resolve, reject) => {
    const abandon = () => reject(asError(signal.reason));
    signal.addEventListener('abort', abandon, { once: true });
    void work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abandon));
  });
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
        (error: unknown) => port.postMessage({ id, error: cloneable(error) }),
      );
    });
    port.postMessage({ ready: true, info: served.info });
  } catch (error) {
    port.postMessage({ ready: false, error: cloneable(error) });
  }
}

/** An Error crosses as itself (its name, message and stack); anything else as its text. */
const cloneable = (error: unknown) => (error instanceof Error ? error : String(error));
