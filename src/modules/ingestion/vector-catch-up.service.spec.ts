import { jest } from '@jest/globals';
import { pino } from 'pino';
import type { ChunkVectorsRepository } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import type { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import type { ReembedService } from 'src/modules/embeddings/reembed.service.js';
import type { DatasetIndexService } from 'src/modules/ingestion/dataset-index.service.js';
import { VectorCatchUpService } from 'src/modules/ingestion/vector-catch-up.service.js';
import { strictMock } from '../../../test/utils/strict-mock.js';

const provider = { name: 'local', model: 'm', dimensions: 4 } as EmbeddingProvider;

function setUp(options: {
  datasets: ChunkVectorsRepository['datasetsMissingVectors'];
  embedMissing?: ReembedService['embedMissing'];
  provider?: EmbeddingProvider | null;
}) {
  const logged: { msg: string; dataset_id?: string; chunks?: number; err?: { message: string } }[] = [];
  let listener: ((provider: EmbeddingProvider) => void) | null = null;
  const datasets = jest.fn(options.datasets);
  const embedMissing = jest.fn(options.embedMissing ?? (() => Promise.resolve(1)));
  const indexRequest = jest.fn<DatasetIndexService['request']>(() => Promise.resolve());
  const current = options.provider === undefined ? provider : options.provider;
  const service = new VectorCatchUpService(
    strictMock<EmbeddingService>({
      current: () => current,
      onProvider: (l) => {
        listener = l;
      },
    }),
    strictMock<ReembedService>({
      embedMissing,
      datasetSeq: (id: string) => Promise.resolve(`seq of ${id}`),
    }),
    strictMock<ChunkVectorsRepository>({ datasetsMissingVectors: datasets }),
    strictMock<DatasetIndexService>({ request: indexRequest }),
    pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) }),
  );
  return { service, logged, datasets, embedMissing, indexRequest, listener: () => listener };
}

/** A promise with its resolve, to hold a call until the test lets it go. */
function held<T>() {
  let release!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (release = resolve));
  return { promise, release };
}

describe('VectorCatchUpService', () => {
  it('logs, and does not reject, when the datasets cannot be listed (a database error)', async () => {
    const { service, logged } = setUp({ datasets: () => Promise.reject(new Error('connection terminated')) });
    await expect(service.request()).resolves.toBeUndefined();
    expect(logged).toContainEqual(
      expect.objectContaining({
        msg: 'could not look for chunks indexed keyword-only: they get their vectors at the next start',
        err: expect.objectContaining({ message: 'connection terminated' }),
      }),
    );
  });

  it('embeds each dataset in turn, past one another run holds and one that fails', async () => {
    const { service, logged, embedMissing, datasets, indexRequest } = setUp({
      datasets: () => Promise.resolve(['ds_a', 'ds_held', 'ds_failing', 'ds_b']),
      embedMissing: (id) => {
        if (id === 'ds_held') return Promise.resolve(null);
        if (id === 'ds_failing') return Promise.reject(new Error('model thread ended'));
        return Promise.resolve(id === 'ds_a' ? 3 : 2);
      },
    });
    await service.request();
    expect(datasets).toHaveBeenCalledWith({ name: 'm', dimensions: 4 });
    expect(embedMissing.mock.calls.map(([id]) => id)).toEqual(['ds_a', 'ds_held', 'ds_failing', 'ds_b']);
    expect(embedMissing.mock.calls[0][1]).toBe(provider);
    const embedded = logged.filter((line) => line.msg === 'dataset indexed keyword-only is now embedded');
    expect(embedded.map(({ dataset_id, chunks }) => ({ dataset_id, chunks }))).toEqual([
      { dataset_id: 'ds_a', chunks: 3 },
      { dataset_id: 'ds_b', chunks: 2 },
    ]);
    // The datasets that got vectors are looked at for an index of their own.
    expect(indexRequest.mock.calls).toEqual([['seq of ds_a'], ['seq of ds_b']]);
    expect(logged).toContainEqual(
      expect.objectContaining({
        dataset_id: 'ds_failing',
        err: expect.objectContaining({ message: 'model thread ended' }),
      }),
    );
  });

  it('starts when told of the provider, and once more when asked during a pass', async () => {
    const first = held<number>();
    const { service, listener, datasets, embedMissing } = setUp({
      datasets: () => Promise.resolve(['ds_a']),
      embedMissing: () => (embedMissing.mock.calls.length === 1 ? first.promise : Promise.resolve(1)),
    });
    service.onApplicationBootstrap();
    listener()!(provider);
    await Promise.resolve();
    expect(datasets).toHaveBeenCalledTimes(1);
    // A document indexed keyword-only while the pass was past its dataset asks for another.
    const asked = service.request();
    first.release(1);
    await asked;
    expect(datasets).toHaveBeenCalledTimes(2);
    expect(embedMissing).toHaveBeenCalledTimes(2);
  });

  it('does nothing without a provider', async () => {
    const { service, datasets } = setUp({ datasets: () => Promise.resolve([]), provider: null });
    await service.request();
    expect(datasets).not.toHaveBeenCalled();
  });

  it('stops at shutdown after the dataset under way, waits for it, and starts nothing after', async () => {
    const first = held<number>();
    const { service, embedMissing, datasets, logged } = setUp({
      datasets: () => Promise.resolve(['ds_a', 'ds_b']),
      embedMissing: () => first.promise,
    });
    void service.request();
    await new Promise((resolve) => setImmediate(resolve));
    expect(embedMissing).toHaveBeenCalledTimes(1);
    const signal = embedMissing.mock.calls[0][2];
    let stopped = false;
    const stopping = service.beforeApplicationShutdown().then(() => (stopped = true));
    expect(signal.aborted).toBe(true);
    await Promise.resolve();
    expect(stopped).toBe(false);
    first.release(5);
    await stopping;
    expect(embedMissing).toHaveBeenCalledTimes(1);
    await service.request();
    expect(datasets).toHaveBeenCalledTimes(1);
    expect(logged.filter((line) => line.msg.startsWith('could not'))).toEqual([]);
  });
});
