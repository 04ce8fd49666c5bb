import { KeyedBatcher } from 'src/common/async/keyed-batcher.js';

function settled<O>(values: O[]): PromiseSettledResult<O>[] {
  return values.map((value) => ({ status: 'fulfilled', value }));
}

describe('KeyedBatcher', () => {
  it('serves a lone item at once and groups what arrives while its key is busy', async () => {
    const batches: string[] = [];
    const batcher = new KeyedBatcher<number, number>(
      async (key, items) => {
        batches.push(`${key}:${items.join(',')}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
        return settled(items.map((x) => x * 10));
      },
      { items: 3, weight: 100, weigh: () => 1 },
    );
    const results = await Promise.all([
      batcher.submit('a', 1),
      batcher.submit('a', 2),
      batcher.submit('b', 3),
      batcher.submit('a', 4),
      batcher.submit('a', 5),
      batcher.submit('a', 6),
    ]);
    expect(results).toEqual([10, 20, 30, 40, 50, 60]);
    // Key b runs beside key a; a's later items wait for its first batch, then go three at a time.
    expect(batches).toEqual(['a:1', 'b:3', 'a:2,4,5', 'a:6']);
  });

  it('keeps a batch within its weight, and runs an item heavier than that alone', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const batcher = new KeyedBatcher<number, number>(
      async (_key, items) => {
        batches.push(items);
        if (batches.length === 1) await held;
        return settled(items);
      },
      { items: 10, weight: 10, weigh: (x) => x },
    );
    const first = batcher.submit('k', 1);
    const rest = [4, 5, 2, 20, 3].map((x) => batcher.submit('k', x));
    release();
    await Promise.all([first, ...rest]);
    expect(batches).toEqual([[1], [4, 5], [2], [20], [3]]);
  });

  it('runs up to perKey batches of one key at once', async () => {
    let running = 0;
    let most = 0;
    const batches: number[][] = [];
    const batcher = new KeyedBatcher<number, number>(
      async (_key, items) => {
        batches.push(items);
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 10));
        running--;
        return settled(items);
      },
      { items: 2, weight: 10, weigh: () => 1, perKey: 2 },
    );
    await Promise.all([1, 2, 3, 4, 5, 6].map((x) => batcher.submit('k', x)));
    expect(most).toBe(2);
    // The first two run alone, side by side; the rest wait for them and go two at a time.
    expect(batches).toEqual([[1], [2], [3, 4], [5, 6]]);
  });

  it('settles each item with its own outcome', async () => {
    const batcher = new KeyedBatcher<number, number>(
      (_key, items) =>
        Promise.resolve(
          items.map((x): PromiseSettledResult<number> =>
            x % 2
              ? { status: 'fulfilled', value: x }
              : { status: 'rejected', reason: new Error(`even ${x}`) },
          ),
        ),
      { items: 10, weight: 10, weigh: () => 1 },
    );
    const outcomes = await Promise.allSettled([1, 2, 3].map((x) => batcher.submit('k', x)));
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([
      1,
      'even 2',
      3,
    ]);
  });

  it('rejects every item of a batch whose run throws, and goes on with the next', async () => {
    let calls = 0;
    const batcher = new KeyedBatcher<number, number>(
      (_key, items) => (++calls === 1 ? Promise.reject(new Error('down')) : Promise.resolve(settled(items))),
      { items: 10, weight: 10, weigh: () => 1 },
    );
    await expect(batcher.submit('k', 1)).rejects.toThrow('down');
    await expect(batcher.submit('k', 2)).resolves.toBe(2);
  });
});
