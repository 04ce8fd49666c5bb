import { withDeadline } from 'src/common/async/deadline.js';
import { RestartingThread, type ThreadOptions } from 'src/common/threads/worker-thread.js';

const poolClosed = () => new Error('the thread pool was closed');

/** A request that ran past its time limit; its thread was stopped. */
export class ThreadTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the request ran for more than ${timeoutMs} ms and its thread was stopped`);
    this.name = 'ThreadTimeoutError';
  }
}

/**
 * Up to `size` threads running one script, each one request at a time, for work that may take seconds
 * and may be cut off (a document's extraction). A thread is started when a request first needs it, and
 * started again when it has ended. Requests wait for a free thread, first come first served. A request
 * that runs past its time limit stops its thread (`ThreadTimeoutError`); a thread past its heap limit
 * ends on its own (`ERR_WORKER_OUT_OF_MEMORY`). Either way the process and the other threads go on.
 */
export class ThreadPool<Request, Reply> {
  private readonly slots: (Promise<RestartingThread<Request, Reply>> | null)[];
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
    this.slots = Array.from({ length: Math.max(1, size) }, () => null);
    this.free = this.slots.map((_, slot) => slot).reverse();
    this.workerData = workerData;
    this.threadOptions = threadOptions;
  }

  async run(request: Request, timeoutMs: number): Promise<Reply> {
    const slot = await this.acquire();
    try {
      const thread = await this.thread(slot);
      return await withDeadline(thread.call(request), timeoutMs, () => {
        const error = new ThreadTimeoutError(timeoutMs);
        void thread.terminate(error);
        return error;
      });
    } finally {
      this.release(slot);
    }
  }

  /** Refuses the requests waiting, and stops the threads once what they run has ended. */
  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.waiting.splice(0)) waiter(null);
    const started = this.slots.filter((slot) => slot !== null);
    await Promise.all(
      started.map((slot) =>
        slot.then(
          (thread) => thread.close(),
          () => undefined,
        ),
      ),
    );
  }

  private acquire(): Promise<number> {
    const slot = this.closed ? undefined : this.free.pop();
    if (slot !== undefined) return Promise.resolve(slot);
    if (this.closed) return Promise.reject(poolClosed());
    return new Promise((resolve, reject) =>
      this.waiting.push((slot) => (slot === null ? reject(poolClosed()) : resolve(slot))),
    );
  }

  private release(slot: number): void {
    const waiter = this.waiting.shift();
    if (waiter) waiter(slot);
    else this.free.push(slot);
  }

  /** The slot's thread, started on first use; a start that fails leaves the slot for the next request. */
  private thread(slot: number): Promise<RestartingThread<Request, Reply>> {
    const known = this.slots[slot];
    if (known) return known;
    const started = RestartingThread.start<Request, Reply>(this.script, this.workerData, this.threadOptions);
    this.slots[slot] = started;
    started.catch(() => {
      if (this.slots[slot] === started) this.slots[slot] = null;
    });
    return started;
  }
}
