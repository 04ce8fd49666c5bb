import { MicroBatcher } from 'src/modules/embeddings/micro-batcher.js';

/** A promise with its settle functions, to end a batch when a test says so. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('MicroBatcher', () => {
  it('serves a lone caller at once and returns outputs in the caller’s order', async () => {
    const batches: string[][] = [];
    const batcher = new MicroBatcher<string, string>(
      (items) => {
        batches.push(items);
        return Promise.resolve(items.map((item) => item.toUpperCase()));
      },
      { maxItems: 8 },
    );
    await expect(batcher.submit(['b', 'a'])).resolves.toEqual(['B', 'A']);
    expect(batches).toEqual([['b', 'a']]);
  });

  it('coalesces items of concurrent callers into full batches while one runs', async () => {
    const sizes: number[] = [];
    const batcher = new MicroBatcher<number, number>(
      async (items) => {
        sizes.push(items.length);
        await new Promise((resolve) => setTimeout(resolve, 10));
        return items.map((x) => x * 2);
      },
      { maxItems: 4 },
    );
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => batcher.submit([i, i + 100])));
    expect(results).toEqual(Array.from({ length: 6 }, (_, i) => [i * 2, (i + 100) * 2]));
    // The first caller's two items run alone; the other ten queue behind them in batches of four.
    expect(sizes).toEqual([2, 4, 4, 2]);
  });

  it('sorts each batch with the given order without changing what callers get back', async () => {
    const seen: string[][] = [];
    const batcher = new MicroBatcher<string, number>(
      (items) => {
        seen.push(items);
        return Promise.resolve(items.map((item) => item.length));
      },
      { maxItems: 10, order: (a, b) => a.length - b.length },
    );
    await expect(batcher.submit(['ccc', 'a', 'bb'])).resolves.toEqual([3, 1, 2]);
    expect(seen).toEqual([['a', 'bb', 'ccc']]);
  });

  it('rejects the callers of a failed batch and keeps serving the next ones', async () => {
    let calls = 0;
    const batcher = new MicroBatcher<number, number>(
      (items) => {
        calls++;
        return calls === 1 ? Promise.reject(new Error('model busy')) : Promise.resolve(items);
      },
      { maxItems: 2 },
    );
    await expect(batcher.submit([1])).rejects.toThrow('model busy');
    await expect(batcher.submit([2])).resolves.toEqual([2]);
  });

  it('runs up to `concurrency` batches at once, and never more', async () => {
    const running = new Set<ReturnType<typeof deferred<number[]>>>();
    let most = 0;
    const batcher = new MicroBatcher<number, number>(
      () => {
        const batch = deferred<number[]>();
        running.add(batch);
        most = Math.max(most, running.size);
        return batch.promise;
      },
      { maxItems: 2, concurrency: 3 },
    );
    const results = Array.from({ length: 10 }, (_, i) => batcher.submit([i]));
    await tick();
    // Three lone callers at once; the other seven wait, to go two by two.
    expect(running.size).toBe(3);
    while (running.size > 0) {
      const [batch] = running;
      running.delete(batch);
      batch.resolve([0, 0]);
      await tick();
    }
    await Promise.all(results);
    expect(most).toBe(3);
  });

  it('closes a batch before its items’ weight passes `maxWeight`, and sends an overweight item alone', async () => {
    const batches: string[][] = [];
    const gate = deferred<void>();
    const batcher = new MicroBatcher<string, number>(
      async (items) => {
        batches.push(items);
        if (batches.length === 1) await gate.promise;
        return items.map((item) => item.length);
      },
      { maxItems: 10, weight: (item) => item.length, maxWeight: 6 },
    );
    const first = batcher.submit(['x']);
    const rest = batcher.submit(['aaa', 'bbb', 'c', 'dddddddd', 'ee']);
    gate.resolve();
    await expect(first).resolves.toEqual([1]);
    await expect(rest).resolves.toEqual([3, 3, 1, 8, 2]);
    expect(batches).toEqual([['x'], ['aaa', 'bbb'], ['c'], ['dddddddd'], ['ee']]);
  });

  it('takes lowered limits from the next batch on', async () => {
    const sizes: number[] = [];
    const batcher = new MicroBatcher<number, number>(
      (items) => {
        sizes.push(items.length);
        return Promise.resolve(items);
      },
      { maxItems: 8, weight: () => 10, maxWeight: 1_000 },
    );
    batcher.lower({ maxItems: 3 });
    batcher.lower({ maxItems: 5 }); // never raised again
    await batcher.submit([1, 2, 3, 4, 5, 6, 7]);
    batcher.lower({ maxWeight: 20 });
    await batcher.submit([1, 2, 3, 4, 5]);
    expect(sizes).toEqual([3, 3, 1, 2, 2, 1]);
    expect(batcher.limits()).toEqual({ maxItems: 3, maxWeight: 20 });
  });

  it('fails only the callers with items in a failed batch, and drops their items still queued', async () => {
    const batches: string[][] = [];
    const first = deferred<string[]>();
    const batcher = new MicroBatcher<string, string>(
      (items) => {
        batches.push(items);
        if (batches.length === 1) return first.promise;
        if (items.includes('bad')) return Promise.reject(new Error('refused'));
        return Promise.resolve(items);
      },
      { maxItems: 2 },
    );
    const lead = batcher.submit(['lead']);
    // Queued behind the first batch: `mixed` shares the failing batch with `other`'s first item.
    const other = batcher.submit(['o1']);
    const mixed = batcher.submit(['bad', 'm2', 'm3', 'm4']);
    const after = batcher.submit(['a1']);
    first.resolve(['LEAD']);
    await expect(lead).resolves.toEqual(['LEAD']);
    await expect(mixed).rejects.toThrow('refused');
    await expect(other).rejects.toThrow('refused');
    await expect(after).resolves.toEqual(['a1']);
    // m2, m3 and m4 were never sent: their caller had already failed.
    expect(batches).toEqual([['lead'], ['o1', 'bad'], ['a1']]);
  });
});
