import { MicroBatcher } from 'src/modules/embeddings/micro-batcher.js';

describe('MicroBatcher', () => {
  it('serves a lone caller at once and returns outputs in the caller’s order', async () => {
    const batches: string[][] = [];
    const batcher = new MicroBatcher<string, string>((items) => {
      batches.push(items);
      return Promise.resolve(items.map((item) => item.toUpperCase()));
    }, 8);
    await expect(batcher.submit(['b', 'a'])).resolves.toEqual(['B', 'A']);
    expect(batches).toEqual([['b', 'a']]);
  });

  it('coalesces items of concurrent callers into full batches while one runs', async () => {
    const sizes: number[] = [];
    const batcher = new MicroBatcher<number, number>(async (items) => {
      sizes.push(items.length);
      await new Promise((resolve) => setTimeout(resolve, 10));
      return items.map((x) => x * 2);
    }, 4);
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
      10,
      (a, b) => a.length - b.length,
    );
    await expect(batcher.submit(['ccc', 'a', 'bb'])).resolves.toEqual([3, 1, 2]);
    expect(seen).toEqual([['a', 'bb', 'ccc']]);
  });

  it('rejects the callers of a failed batch and keeps serving the next ones', async () => {
    let calls = 0;
    const batcher = new MicroBatcher<number, number>((items) => {
      calls++;
      return calls === 1 ? Promise.reject(new Error('model busy')) : Promise.resolve(items);
    }, 2);
    await expect(batcher.submit([1])).rejects.toThrow('model busy');
    await expect(batcher.submit([2])).resolves.toEqual([2]);
  });
});
