import { jest } from '@jest/globals';
import type { Request } from 'express';
import type { RerankConfig } from 'src/modules/search/rerank/rerank.config.js';
import type { SearchConfig } from 'src/modules/search/search.config.js';
import { ANONYMOUS } from 'src/modules/auth/auth.types.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import type { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import type { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { EarlyQueryEmbedding } from 'src/modules/search/early-query-embedding.js';
import type { RerankService } from 'src/modules/search/rerank/rerank.service.js';
import type { KeywordLeg } from 'src/modules/search/keyword-leg.js';
import type { ChunkReadsRepository } from 'src/modules/chunk-index/chunk-reads.repository.js';
import type { IndexState, IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';
import type { SearchReads } from 'src/modules/search/search-reads.js';
import type { Highlights } from 'src/modules/search/highlights.js';
import type { VectorLeg } from 'src/modules/search/vector-leg.js';
import { QueryVectors } from 'src/modules/search/query-vectors.js';
import { SearchLegs } from 'src/modules/search/search-legs.js';
import { type SearchOptions, SearchService } from 'src/modules/search/search.service.js';
import { strictMock } from '../../../test/utils/strict-mock.js';

const OPTIONS: SearchOptions = { limit: 5, rerank: false, mode: 'hybrid', explain: false };

function setUp(idle: boolean | undefined) {
  const embedQuery = jest.fn((text: string) => Promise.resolve([text.length, 0]));
  const provider = strictMock<EmbeddingProvider>({
    model: 'm',
    dimensions: 2,
    embedQuery,
    ...(idle === undefined ? { idleForQueries: undefined } : { idleForQueries: () => idle }),
  });
  const dataset = { id: 'ds_1', seq: '1' } as DatasetEntity;
  const index: IndexState = {
    chunkCount: 1,
    totalChunkLength: 1,
    embeddingModel: 'm',
    embeddingDimensions: 2,
    nextEmbeddingModel: null,
    nextEmbeddingDimensions: null,
    vectorIndexDimensions: null,
    fusion: null,
  };
  const queryVectors = new QueryVectors(strictMock<EmbeddingService>({ current: () => provider }));
  const search = new SearchService(
    new SearchLegs(
      strictMock<KeywordLeg>({}),
      strictMock<VectorLeg>({}),
      queryVectors,
      strictMock<SearchConfig>({}),
    ),
    strictMock<ChunkReadsRepository>({}),
    strictMock<IndexStateRepository>({ of: () => Promise.resolve(index) }),
    strictMock<SearchReads>({ statements: () => () => Promise.resolve([]) }),
    strictMock<DatasetsService>({ get: () => Promise.resolve(dataset) }),
    strictMock<EmbeddingService>({
      current: () => provider,
      forModel: ({ name }) => (name === provider.model ? provider : null),
    }),
    queryVectors,
    strictMock<RerankService>({ current: () => null }),
    strictMock<Highlights>({}),
    strictMock<SearchConfig>({}),
    strictMock<RerankConfig>({}),
  );
  return { search, early: new EarlyQueryEmbedding(search), embedQuery };
}

const requestWith = (body: unknown) => ({ body }) as Request;

describe('A query embedded before its request is checked', () => {
  it('starts when the embedder is idle, and the search uses it instead of embedding again', async () => {
    const { search, early, embedQuery } = setUp(true);
    const request = requestWith({ dataset_id: 'ds_1', query: 'energy of the cell' });
    early.start(request);
    expect(request.earlyQueryVector).toMatchObject({ query: 'energy of the cell' });
    expect(embedQuery).toHaveBeenCalledTimes(1);

    const prepared = await search.prepare(ANONYMOUS, 'ds_1', OPTIONS, ['energy of the cell'], {
      early: request.earlyQueryVector,
    });
    await expect(prepared.vectors.get('energy of the cell')).resolves.toEqual([18, 0]);
    expect(embedQuery).toHaveBeenCalledTimes(1);
  });

  it('is not used for another query (the body as validated may differ)', async () => {
    const { search, embedQuery } = setUp(true);
    const early = { query: 'other', vector: Promise.resolve([9, 9]) };
    const prepared = await search.prepare(ANONYMOUS, 'ds_1', OPTIONS, ['energy'], { early });
    await expect(prepared.vectors.get('energy')).resolves.toEqual([6, 0]);
    expect(embedQuery).toHaveBeenCalledWith('energy', undefined); // no deadline given here
  });

  it.each([
    ['the embedder is busy', false, { query: 'energy' }],
    ['each call has a price (no idleness to ask)', undefined, { query: 'energy' }],
    ['the search is keyword-only', true, { query: 'energy', mode: 'keyword' }],
    ['the query is not a string', true, { query: 42 }],
    ['the query is empty', true, { query: '' }],
    ['the query is over 1,000 characters', true, { query: 'a'.repeat(1001) }],
    ['the query holds U+0000', true, { query: 'a\u0000b' }],
  ])('does not start when %s', (_case, idle, body) => {
    const { early, embedQuery } = setUp(idle);
    const request = requestWith(body);
    early.start(request);
    expect(request.earlyQueryVector).toBeUndefined();
    expect(embedQuery).not.toHaveBeenCalled();
  });
});
