/** One caller's `submit`: once one of its items fails, its items still queued are dropped. */
interface Caller {
  error?: { reason: unknown };
}

interface Pending<I, O> {
  item: I;
  caller: Caller;
  resolve(output: O): void;
  reject(error: unknown): void;
}

export interface MicroBatcherOptions<I> {
  /** Items a batch holds at most. */
  maxItems: number;
  /** Batches run at once (default 1). */
  concurrency?: number;
  /** An item's weight (e.g. its estimated tokens), for `maxWeight`. */
  weight?: (item: I) => number;
  /** The most weight a batch holds; an item heavier than this alone goes in a batch of its own. */
  maxWeight?: number;
  /** Orders the items of one batch (e.g. by length, so that little of the batch is padding). */
  order?: (a: I, b: I) => number;
}

/**
 * Coalesces items from concurrent callers into batches for a worker function that runs up to
 * `concurrency` batches at a time. While they run, new items queue up; as soon as one ends, the next
 * batch takes up to `maxItems` of them (and `maxWeight`). There is no waiting timer: a lone caller is
 * served at once, and under load batches fill up by themselves. Used for the local model, which runs
 * one batch at a time and pays a fixed cost per run, and for remote providers, which pay a round trip
 * per request, while each ingestion job only has a few chunks.
 *
 * Each caller gets its own outputs in order. A failed batch fails only the callers with items in it;
 * their other items still queued are dropped, not run for nothing.
 */
export class MicroBatcher<I, O> {
  private readonly queue: Pending<I, O>[] = [];
  private running = 0;
  private maxItems: number;
  private maxWeight: number;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly options: MicroBatcherOptions<I>,
  ) {
    this.maxItems = options.maxItems;
    this.maxWeight = options.maxWeight ?? Number.POSITIVE_INFINITY;
  }

  /** The limits of the batches not yet taken; they only ever go down (a server that refused a batch). */
  lower(limits: { maxItems?: number; maxWeight?: number }): void {
    if (limits.maxItems !== undefined) this.maxItems = Math.max(1, Math.min(this.maxItems, limits.maxItems));
    if (limits.maxWeight !== undefined)
      this.maxWeight = Math.max(1, Math.min(this.maxWeight, limits.maxWeight));
  }

  limits(): { maxItems: number; maxWeight: number } {
    return { maxItems: this.maxItems, maxWeight: this.maxWeight };
  }

  submit(items: I[]): Promise<O[]> {
    const caller: Caller = {};
    const results = items.map(
      (item) => new Promise<O>((resolve, reject) => this.queue.push({ item, caller, resolve, reject })),
    );
    this.drain();
    return Promise.all(results);
  }

  private drain(): void {
    while (this.running < (this.options.concurrency ?? 1) && this.queue.length > 0) {
      const batch = this.take();
      if (this.options.order) batch.sort((a, b) => this.options.order!(a.item, b.item));
      this.running++;
      void this.run(batch.map((pending) => pending.item))
        .then((outputs) => batch.forEach((pending, i) => pending.resolve(outputs[i])))
        .catch((error: unknown) => this.fail(batch, error))
        .finally(() => {
          this.running--;
          this.drain();
        });
    }
  }

  /** The next batch: queued items in order, up to `maxItems` and `maxWeight` (the first always). */
  private take(): Pending<I, O>[] {
    const weigh = this.options.weight ?? (() => 0);
    let count = 0;
    let weight = 0;
    while (count < this.queue.length && count < this.maxItems) {
      const next = weigh(this.queue[count].item);
      if (count > 0 && weight + next > this.maxWeight) break;
      weight += next;
      count++;
    }
    return this.queue.splice(0, count);
  }

  private fail(batch: Pending<I, O>[], reason: unknown): void {
    for (const pending of batch) {
      pending.caller.error ??= { reason };
      pending.reject(reason);
    }
    // The failed callers' other items: their callers' promises are already rejected.
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const pending = this.queue[i];
      if (!pending.caller.error) continue;
      this.queue.splice(i, 1);
      pending.reject(pending.caller.error.reason);
    }
  }
}
