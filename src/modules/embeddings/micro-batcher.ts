interface Pending<I, O> {
  item: I;
  resolve(output: O): void;
  reject(error: unknown): void;
}

/**
 * Coalesces items from concurrent callers into batches for one worker function that runs one batch
 * at a time. While a batch runs, new items queue up; as soon as it ends, up to `maxBatch` of them go
 * next. There is no waiting timer: a lone caller is served at once, and under load batches fill up by
 * themselves. Used for the embedding model, which runs one batch at a time and pays a fixed cost per
 * run, while each ingestion job only has a few chunks (on SciFact's chunks of 256 tokens, though,
 * batches of 19 were no faster than batches of 2: docs/benchmarks.md).
 */
export class MicroBatcher<I, O> {
  private readonly queue: Pending<I, O>[] = [];
  private running = false;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly maxBatch: number,
    /** Orders the items of one batch (e.g. by length, so that little of the batch is padding). */
    private readonly order?: (a: I, b: I) => number,
  ) {}

  submit(items: I[]): Promise<O[]> {
    const results = items.map(
      (item) => new Promise<O>((resolve, reject) => this.queue.push({ item, resolve, reject })),
    );
    this.drain();
    return Promise.all(results);
  }

  private drain(): void {
    if (this.running || this.queue.length === 0) return;
    this.running = true;
    const batch = this.queue.splice(0, this.maxBatch);
    if (this.order) batch.sort((a, b) => this.order!(a.item, b.item));
    this.run(batch.map((pending) => pending.item))
      .then((outputs) => batch.forEach((pending, i) => pending.resolve(outputs[i])))
      .catch((error: unknown) => batch.forEach((pending) => pending.reject(error)))
      .finally(() => {
        this.running = false;
        this.drain();
      });
  }
}
