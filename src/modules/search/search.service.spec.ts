import { jest } from '@jest/globals';
import type { AppConfig } from 'src/config/app-config.js';
import { ANONYMOUS } from 'src/modules/auth/auth.types.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import type { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import type { EmbeddingProvider } from 'src/modules/ingestion/embedding/embedding-provider.js';
import type { EmbeddingService } from 'src/modules/ingestion/embedding/embedding.service.js';
import type { RerankService } from 'src/modules/search/rerank/rerank.service.js';
import type { SearchRepository } from 'src/modules/search/search.repository.js';
import { SearchService } from 'src/modules/search/search.service.js';
import { strictMock } from '../../../test/utils/strict-mock.js';

const OPTIONS = { limit: 5, rerank: false, mode: 'hybrid', explain: false } as const;

/** A service whose legs find nothing, with a query embedder that records what it is given. */
function setUp() {
  const embedQuery = jest.fn((_text: string, _signal?: AbortSignal) => Promise.resolve([1, 0]));
  const provider = strictMock<EmbeddingProvider>({ model: 'm', dimensions: 2, embedQuery });
  const dataset = {
    seq: '1',
    chunkCount: '2',
    embeddingModel: 'm',
    embeddingDimensions: 2,
    reembedding: false,
  };
  const search = new SearchService(
    strictMock<SearchRepository>({ semantic: () => Promise.resolve([]), keyword: () => Promise.resolve([]) }),
    strictMock<DatasetsService>({ get: () => Promise.resolve(dataset as DatasetEntity) }),
    strictMock<EmbeddingService>({ current: () => provider }),
    strictMock<RerankService>({ current: () => null }),
    strictMock<AppConfig>({
      search: { timeoutMs: 1_000, batchConcurrency: 2, bm25K1: 1.2, bm25B: 0.75 } as AppConfig['search'],
    }),
  );
  return { search, embedQuery };
}

describe('SearchService', () => {
  it('hands its deadline to the query embedding, which gives up waiting for the model when it aborts', async () => {
    const { search, embedQuery } = setUp();
    expect(await search.query(ANONYMOUS, { ...OPTIONS, dataset_id: 'ds_1', query: 'energy' })).toEqual([]);
    expect(embedQuery).toHaveBeenCalledWith('energy', expect.any(AbortSignal));
  });

  it('hands one deadline to every embedding of a batch', async () => {
    const { search, embedQuery } = setUp();
    const answers = await search.batch(ANONYMOUS, { ...OPTIONS, dataset_id: 'ds_1', queries: ['a', 'b'] });
    expect(answers).toEqual([
      { query: 'a', results: [] },
      { query: 'b', results: [] },
    ]);
    const signals = embedQuery.mock.calls.map(([, signal]) => signal);
    expect(signals).toEqual([expect.any(AbortSignal), expect.any(AbortSignal)]);
    expect(signals[0]).toBe(signals[1]);
    expect(signals[0]!.aborted).toBe(false);
  });
});
