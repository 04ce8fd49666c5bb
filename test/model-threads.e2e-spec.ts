import type { Worker } from 'node:worker_threads';
import type * as Provider from 'src/modules/ingestion/embedding/local-embedding.provider.js';

/**
 * The local model's worker threads, through the built provider: its threads run the compiled worker
 * scripts, which the TypeScript sources are not.
 */
const { LocalEmbeddingProvider } = (await import(
  `${process.cwd()}/dist/modules/ingestion/embedding/local-embedding.provider.js`
)) as typeof Provider;

type LocalEmbeddingProvider = Provider.LocalEmbeddingProvider;

/** The Node worker behind the provider's passages thread (private: this test ends it from outside). */
const passageWorker = (provider: LocalEmbeddingProvider) =>
  (provider['passages'] as unknown as { worker: Worker }).worker;

const create = () =>
  LocalEmbeddingProvider.create({
    model: 'synthetic/bert-L6-H384',
    modelsDir: '.cache/models',
    allowDownload: false,
    batchSize: 32,
    queriesInWorker: false,
  });

describe('The local model’s worker threads', () => {
  it('start the passages’ thread again when it has ended, with the same model', async () => {
    const provider = await create();
    try {
      const [before] = await provider.embedPassages(['Thread restarts keep ingestion going.']);
      const ended = passageWorker(provider);
      await ended.terminate(); // as a thread out of its heap would end
      const [after] = await provider.embedPassages(['Thread restarts keep ingestion going.']);
      expect(passageWorker(provider)).not.toBe(ended);
      after.forEach((value, i) => expect(value).toBeCloseTo(before[i], 6));
      // Without a query thread, a query is run alone in the passages' thread.
      expect(await provider.embedQuery('Thread restarts keep ingestion going.')).toHaveLength(384);
    } finally {
      await provider.close();
    }
  }, 60_000);

  it('fail one request that throws in the thread, not the thread; refuse all once closed', async () => {
    const provider = await create();
    const chunking = { maxTokens: 64, overlapTokens: 0 };
    try {
      await expect(provider.chunk({ format: 'prose', sections: null! }, chunking)).rejects.toThrow(
        TypeError.name,
      );
      const chunks = await provider.chunk(
        { format: 'prose', sections: [{ text: 'One sentence. Two.' }] },
        chunking,
      );
      expect(chunks.map((chunk) => chunk.content)).toEqual(['One sentence. Two.']);
    } finally {
      await provider.close();
    }
    await expect(provider.embedPassages(['After closing.'])).rejects.toThrow('closed');
    await expect(provider.embedQuery('After closing.')).rejects.toThrow('closed');
  }, 60_000);
});
