interface Pending<I, O> {
  item: I;
  resolve(output: O): void;
  reject(error: unknown): void;
}

export interface BatchLimits<I> {
  /** Items a batch takes at most. */
  items: number;
  /** The weight a batch stays within; an item heavier than that still runs, alone. */
  weight: number;
  weigh(item: I): number;
  /** Batches of one key that run at once (1 unless given). */
  perKey?: number;
}

/**
 * Groups items of concurrent callers by key, and runs `perKey` batches per key at a time: while a key's
 * batches run, its new items wait, and as soon as one ends they go next, together, up to the limits.
 * Batches of different keys run at the same time. There is no waiting timer: a lone caller is served
 * at once, and under load batches fill up by themselves. Each item settles on its own: `run` answers
 * one outcome per item, so that one item's failure is not its batch's.
 */
export class KeyedBatcher<I, O> {
  private readonly waiting = new Map<string, Pending<I, O>[]>();
  /** Batches under way, by key. */
  private readonly running = new Map<string, number>();

  constructor(
    private readonly run: (key: string, items: I[]) => Promise<PromiseSettledResult<O>[]>,
    private readonly limits: BatchLimits<I>,
  ) {}

  submit(key: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const queue = this.waiting.get(key) ?? [];
      queue.push({ item, resolve, reject });
      this.waiting.set(key, queue);
      this.drain(key);
    });
  }

  private drain(key: string): void {
    const queue = this.waiting.get(key);
    const running = this.running.get(key) ?? 0;
    if (running >= (this.limits.perKey ?? 1) || !queue) return;
    const batch = this.take(queue);
    if (queue.length === 0) this.waiting.delete(key);
    this.running.set(key, running + 1);
    this.run(
      key,
      batch.map((pending) => pending.item),
    )
      .then((outcomes) =>
        batch.forEach((pending, i) => {
          const outcome = outcomes[i];
          if (outcome?.status === 'fulfilled') pending.resolve(outcome.value);
          else
            pending.reject(outcome ? outcome.reason : new Error('the batch answered no outcome for an item'));
        }),
      )
      .catch((error: unknown) => batch.forEach((pending) => pending.reject(error)))
      .finally(() => {
        const left = this.running.get(key)! - 1;
        if (left === 0) this.running.delete(key);
        else this.running.set(key, left);
        this.drain(key);
      });
  }

  /** The first items of the queue within the limits, at least one. */
  private take(queue: Pending<I, O>[]): Pending<I, O>[] {
    let count = 0;
    let weight = 0;
    while (count < queue.length && count < this.limits.items) {
      const next = this.limits.weigh(queue[count].item);
      if (count > 0 && weight + next > this.limits.weight) break;
      weight += next;
      count++;
    }
    return queue.splice(0, count);
  }
}
