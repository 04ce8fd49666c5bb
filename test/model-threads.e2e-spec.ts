import type { Worker } from 'node:worker_threads';
import type * as Provider from 'src/modules/embeddings/local-embedding.provider.js';
import { longestStall, scifactAbstracts } from './utils/responsiveness.js';
import { until } from './utils/until.js';

/**
 * The local model's worker threads, through the built provider: its threads run the compiled worker
 * scripts, which the TypeScript sources are not.
 */
const { LocalEmbeddingProvider } = (await import(
  `${process.cwd()}/dist/modules/embeddings/local-embedding.provider.js`
)) as typeof Provider;

type LocalEmbeddingProvider = Provider.LocalEmbeddingProvider;

/** The Node worker behind one of the provider's threads (private: these tests end it from outside). */
const worker = (provider: LocalEmbeddingProvider, thread: 'passages' | 'queries') =>
  (provider[thread] as unknown as { thread: { worker: Worker } }).thread.worker;
const passageWorker = (provider: LocalEmbeddingProvider) => worker(provider, 'passages');

const failures: Error[] = [];
const create = (threads = { passages: true, queries: false }) =>
  LocalEmbeddingProvider.create({
    model: 'synthetic/bert-L6-H384',
    modelsDir: '.cache/models',
    batchSize: 32,
    threads,
    onQueryThreadError: (error) => {
      throw error;
    },
    onThreadFailure: (error) => failures.push(error),
  });

const QUERY = 'Thread restarts keep searches going.';

describe('The local model’s worker threads', () => {
  it('start the passages’ thread again when it has ended, with the same model', async () => {
    const provider = await create();
    try {
      const [before] = await provider.embedPassages(['Thread restarts keep ingestion going.']);
      const ended = passageWorker(provider);
      await ended.terminate(); // as a thread out of its heap would end
      expect(failures.splice(0).map((error) => error.message)).toEqual(['a worker thread exited (code 1)']);
      const [after] = await provider.embedPassages(['Thread restarts keep ingestion going.']);
      expect(passageWorker(provider)).not.toBe(ended);
      after.forEach((value, i) => expect(value).toBeCloseTo(before[i], 6));
      // Without a query thread, a query is run alone in the passages' thread.
      expect(await provider.embedQuery('Thread restarts keep ingestion going.')).toHaveLength(384);
    } finally {
      await provider.close();
    }
  }, 60_000);

  it('start the query thread again in the background, queries sharing the passages’ thread meanwhile', async () => {
    const provider = await create({ passages: true, queries: true });
    try {
      const before = await provider.embedQuery(QUERY);
      expect(provider.idleForQueries()).toBe(true);
      const passages = passageWorker(provider);
      const ended = worker(provider, 'queries');
      expect(ended).not.toBe(passages);
      await ended.terminate();
      expect(failures.splice(0).map((error) => error.message)).toEqual(['a worker thread exited (code 1)']);
      expect(provider.idleForQueries()).toBe(false); // searches do not wait for it (see SearchService)
      // This query does not wait for the new thread: it runs alone in the passages' thread.
      const during = await provider.embedQuery(QUERY);
      during.forEach((value, i) => expect(value).toBeCloseTo(before[i], 5));
      await until(() => provider.idleForQueries());
      expect(worker(provider, 'queries')).not.toBe(ended);
      const after = await provider.embedQuery(QUERY);
      after.forEach((value, i) => expect(value).toBeCloseTo(before[i], 6));
      expect(passageWorker(provider)).toBe(passages);
    } finally {
      await provider.close();
    }
    expect(failures).toEqual([]);
  }, 60_000);

  it('serve searches alone with one thread, which a query waits for when it starts again', async () => {
    const provider = await create({ passages: false, queries: true });
    try {
      // One copy of the model: the query thread does whatever passage work comes (none, in `ROLE=api`).
      expect(provider['passages']).toBe(provider['queries']);
      const before = await provider.embedQuery(QUERY);
      const ended = worker(provider, 'queries');
      await ended.terminate();
      const after = await provider.embedQuery(QUERY);
      expect(worker(provider, 'queries')).not.toBe(ended);
      after.forEach((value, i) => expect(value).toBeCloseTo(before[i], 6));
      expect(failures.splice(0)).toHaveLength(1);
    } finally {
      await provider.close();
    }
  }, 60_000);

  it('chunk by the model’s tokenizer without holding the main thread', async () => {
    const provider = await create();
    try {
      // About 1.2 s of tokenising in JavaScript: on the main thread, one stall as long as the whole.
      const text = scifactAbstracts(600).slice(0, 1_000_000);
      const {
        result: chunks,
        stallMs,
        elapsedMs,
      } = await longestStall(() =>
        provider.chunk({ format: 'prose', sections: [{ text }] }, { maxTokens: 254, overlapTokens: 32 }),
      );
      expect(chunks.length).toBeGreaterThan(900);
      expect(stallMs).toBeLessThan(elapsedMs / 4);
    } finally {
      await provider.close();
    }
  }, 60_000);

  it('fail one request that throws in the thread, not the thread; refuse all once closed', async () => {
    const provider = await create();
    const chunking = { maxTokens: 64, overlapTokens: 0 };
    try {
      const thread = passageWorker(provider);
      // The thread's own error comes back, as the error it was.
      await expect(provider.chunk({ format: 'prose', sections: null! }, chunking)).rejects.toMatchObject({
        name: 'TypeError',
        message: expect.stringMatching(/^Cannot read properties of null/),
      });
      expect(passageWorker(provider)).toBe(thread);
      const chunks = await provider.chunk(
        { format: 'prose', sections: [{ text: 'One sentence. Two.' }] },
        chunking,
      );
      expect(chunks.map((chunk) => chunk.content)).toEqual(['One sentence. Two.']);
      expect(passageWorker(provider)).toBe(thread);
    } finally {
      await provider.close();
    }
    await expect(provider.embedPassages(['After closing.'])).rejects.toThrow('closed');
    await expect(provider.embedQuery('After closing.')).rejects.toThrow('closed');
    expect(failures).toEqual([]); // closing is no failure
  }, 60_000);
});
