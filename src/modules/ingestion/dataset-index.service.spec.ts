import { jest } from '@jest/globals';
import { pino } from 'pino';
import type {
  DatasetVectorIndex,
  DatasetVectorIndexRepository,
} from 'src/modules/chunk-index/dataset-vector-index.repository.js';
import { DatasetIndexService } from 'src/modules/ingestion/dataset-index.service.js';
import { strictMock } from '../../../test/utils/strict-mock.js';

const LARGE: DatasetVectorIndex = { datasetSeq: '7', dimensions: 384 };
const GONE: DatasetVectorIndex = { datasetSeq: '3', dimensions: 384 };

function setUp(
  minChunks: number,
  build: (index: DatasetVectorIndex) => Promise<boolean> = () => Promise.resolve(true),
) {
  const calls: string[] = [];
  const repository = strictMock<DatasetVectorIndexRepository>({
    dropStale: () => {
      calls.push('dropStale');
      return Promise.resolve([GONE]);
    },
    lacking: (min, datasetId) => {
      calls.push(`lacking ${min} ${datasetId ?? 'all'}`);
      return Promise.resolve([LARGE]);
    },
    build: (index) => {
      calls.push(`build ${index.datasetSeq}`);
      return build(index);
    },
    cancelBuild: jest.fn(() => Promise.resolve()),
  });
  const service = new DatasetIndexService(
    repository,
    { datasetIndexMinChunks: minChunks },
    pino({ level: 'silent' }),
  );
  return { service, calls, repository };
}

describe('DatasetIndexService', () => {
  it('drops the indexes of datasets gone and builds the lacking ones in a pass over all datasets', async () => {
    const { service, calls } = setUp(20_000);
    await service.request(null);
    expect(calls).toEqual(['dropStale', 'lacking 20000 all', 'build 7']);
  });

  it('makes a pass over all datasets at start', async () => {
    const { service, calls } = setUp(20_000);
    service.onApplicationBootstrap();
    // A request made meanwhile waits for the start's pass, then runs its own.
    await service.request('ds_1');
    expect(calls).toEqual(['dropStale', 'lacking 20000 all', 'build 7', 'lacking 20000 ds_1', 'build 7']);
  });

  it('looks at one dataset after a document is indexed, without the sweep', async () => {
    const { service, calls } = setUp(20_000);
    await service.request('ds_1');
    expect(calls).toEqual(['lacking 20000 ds_1', 'build 7']);
  });

  it('runs one pass at a time, in the order asked, each dataset once', async () => {
    let release!: () => void;
    const first = new Promise<boolean>((resolve) => (release = () => resolve(true)));
    const builds = [first, Promise.resolve(true)];
    const { service, calls } = setUp(20_000, () => builds.shift()!);
    const running = service.request('ds_1');
    void service.request('ds_2');
    void service.request('ds_2');
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toEqual(['lacking 20000 ds_1', 'build 7']);
    release();
    await running;
    expect(calls).toEqual(['lacking 20000 ds_1', 'build 7', 'lacking 20000 ds_2', 'build 7']);
  });

  it('only sweeps when per-dataset indexes are off (0)', async () => {
    const { service, calls } = setUp(0);
    await service.request('ds_1');
    await service.request(null);
    expect(calls).toEqual(['dropStale']);
  });

  it('logs a failure and takes the next request', async () => {
    const { service, calls } = setUp(20_000, () => Promise.reject(new Error('connection reset')));
    await expect(service.request('ds_1')).resolves.toBeUndefined();
    await service.request('ds_2');
    expect(calls).toEqual(['lacking 20000 ds_1', 'build 7', 'lacking 20000 ds_2', 'build 7']);
  });

  it('cancels the build under way at shutdown and starts no more', async () => {
    const { service, calls, repository } = setUp(20_000);
    await service.beforeApplicationShutdown();
    await service.request('ds_1');
    expect(repository.cancelBuild).toHaveBeenCalled();
    expect(calls).toEqual([]);
  });
});
