import { withDeadline } from 'src/common/async/deadline.js';
import { asError, type ThreadOptions, WorkerThread } from 'src/common/threads/worker-thread.js';

const poolClosed = () => new Error('the thread pool was closed');

/** A request that ran past its time limit; its thread was stopped. */
export class ThreadTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the request ran for more than ${timeoutMs} ms and its thread was stopped`);
    this.name = 'ThreadTimeoutError';
  }
}

/** A thread of the pool could not be started for a request (the request itself never ran). */
export class ThreadStartError extends Error {
  constructor(cause: unknown) {
    super(`a worker thread could not start: ${asError(cause).message}`, { cause });
    this.name = 'ThreadStartError';
  }
}

/** How long a thread of the pool may take to start (its script loads no model). */
const START_TIMEOUT_MS = 60_000;

/**
 * Up to `size` threads running one script, each one request at a time, for work that may take seconds
 * and may be cut off (a document's extraction). A thread is started when a request needs one and none
 * is free, and started anew for the next request once it has ended. Requests wait for a free thread,
 * first come first served.
 *
 * A request's time limit counts its run alone, not the wait for a thread nor the thread's start. Past
 * it, the thread is stopped (`ThreadTimeoutError`); a thread past its heap limit ends on its own (the
 * request fails with `ERR_WORKER_OUT_OF_MEMORY`). A thread that cannot start fails the request with
 * `ThreadStartError`. Either way the process and the other threads go on.
 */
export class ThreadPool<Request, Reply> {
  /** Each slot's thread, once started (it may have ended since). */
  private readonly threads: (WorkerThread<Request, Reply> | null)[];
  private readonly free: number[];
  /** Requests waiting for a thread: given a free slot, or null when the pool closes. */
  private readonly waiting: ((slot: number | null) => void)[] = [];
  private readonly workerData: unknown;
  private readonly threadOptions: ThreadOptions;
  private closed = false;

  constructor(
    private readonly script: URL,
    { size, workerData, ...threadOptions }: { size: number; workerData?: unknown } & ThreadOptions,
  ) {
    this.threads = Array.from({ length: Math.max(1, size) }, () => null);
    // Taken from the end: the first slot first, so that a pool under light load runs one thread.
    this.free = this.threads.map((_, slot) => slot).reverse();
    this.workerData = workerData;
    this.threadOptions = { startTimeoutMs: START_TIMEOUT_MS, ...threadOptions };
  }

  async run(request: Request, timeoutMs: number): Promise<Reply> {
    const slot = await this.acquire();
    try {
      const thread = await this.live(slot);
      return await withDeadline(thread.call(request), timeoutMs, () => {
        const error = new ThreadTimeoutError(timeoutMs);
        void thread.terminate(error);
        return error;
      });
    } finally {
      this.release(slot);
    }
  }

  /**
   * Refuses the requests waiting and any later ones, and closes the threads: each finishes the request
   * it runs first, for up to `WorkerThread.close`'s grace.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.waiting.splice(0)) waiter(null);
    await Promise.all(this.threads.map((thread) => thread?.close() ?? Promise.resolve()));
  }

  private acquire(): Promise<number> {
    if (this.closed) return Promise.reject(poolClosed());
    const slot = this.free.pop();
    if (slot !== undefined) return Promise.resolve(slot);
    return new Promise((resolve, reject) =>
      this.waiting.push((slot) => (slot === null ? reject(poolClosed()) : resolve(slot))),
    );
  }

  private release(slot: number): void {
    const waiter = this.waiting.shift();
    if (waiter) waiter(slot);
    else this.free.push(slot);
  }

  /** The slot's thread, started when it has none running. Only the request holding the slot asks. */
  private async live(slot: number): Promise<WorkerThread<Request, Reply>> {
    const known = this.threads[slot];
    if (known?.alive) return known;
    let thread: WorkerThread<Request, Reply>;
    try {
      thread = await WorkerThread.start<Request, Reply>(this.script, this.workerData, this.threadOptions);
    } catch (error) {
      throw new ThreadStartError(error);
    }
    if (this.closed) {
      await thread.close();
      throw poolClosed();
    }
    this.threads[slot] = thread;
    return thread;
  }
}
