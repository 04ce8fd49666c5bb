import { jest } from '@jest/globals';
import type { SearchConfig } from 'src/modules/search/search.config.js';
import { ANONYMOUS } from 'src/modules/auth/auth.types.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import type { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import type { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import type { RerankService } from 'src/modules/search/rerank/rerank.service.js';
import type { Reranker } from 'src/modules/search/rerank/reranker.js';
import type { KeywordLeg } from 'src/modules/search/keyword-leg.js';
import type { ChunkReadsRepository, ChunkRow } from 'src/modules/chunk-index/chunk-reads.repository.js';
import type { IndexState, IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';
import type { SearchReads } from 'src/modules/search/search-reads.js';
import type { Highlights } from 'src/modules/search/highlights.js';
import type { LegHit, LegRequest } from 'src/modules/search/search.types.js';
import type { VectorLeg } from 'src/modules/search/vector-leg.js';
import { QueryVectors } from 'src/modules/search/query-vectors.js';
import { SearchLegs } from 'src/modules/search/search-legs.js';
import { SearchService } from 'src/modules/search/search.service.js';
import { strictMock } from '../../../test/utils/strict-mock.js';

/** What the service reads through: each leg's ranking, and the rows read after the fusion. */
interface Legs {
  keyword?: KeywordLeg['rank'];
  semantic?: VectorLeg['rank'];
  /** The vector leg of several datasets in one walk. */
  across?: VectorLeg['rankAcross'];
  chunks?: ChunkReadsRepository['chunks'];
}

const OPTIONS = {
  limit: 5,
  rerank: false,
  mode: 'hybrid',
  explain: false,
  min_score: 0,
  highlight: false,
} as const;

/**
 * A service over one dataset, with a query embedder that records what it is given. Its legs find
 * nothing unless `legs` says otherwise; `reranker` is the configured reranker, if any.
 */
function setUp({
  legs = { semantic: () => Promise.resolve([]), keyword: () => Promise.resolve([]) },
  reranker = null,
  batches = false,
  indexes = {},
}: {
  legs?: Legs;
  reranker?: Reranker | null;
  batches?: boolean;
  /** Datasets beside ds_1 (`ds_<seq>`), each with what its index differs in. */
  indexes?: Record<string, Partial<IndexState>>;
} = {}) {
  const embedQuery = jest.fn((_text: string, _signal?: AbortSignal) => Promise.resolve([1, 0]));
  // A provider that takes several queries at once answers each text with its length.
  const embedQueries = jest.fn((texts: string[], _signal?: AbortSignal) =>
    Promise.resolve(texts.map((text) => [text.length, 0])),
  );
  const provider = strictMock<EmbeddingProvider>({
    model: 'm',
    dimensions: 2,
    embedQuery,
    embedQueries: batches ? embedQueries : undefined,
  });
  const dataset = { id: 'ds_1', seq: '1', language: 'english' };
  const index: IndexState = {
    chunkCount: 2,
    totalChunkLength: 20,
    embeddingModel: 'm',
    embeddingDimensions: 2,
    nextEmbeddingModel: null,
    nextEmbeddingDimensions: null,
    vectorIndexDimensions: null,
    fusion: null,
  };
  const config = strictMock<SearchConfig>({ timeoutMs: 1_000, batchConcurrency: 2, bm25K1: 1.2, bm25B: 0.6 });
  const queryVectors = new QueryVectors(strictMock<EmbeddingService>({ current: () => provider }));
  const search = new SearchService(
    new SearchLegs(
      strictMock<KeywordLeg>(legs.keyword ? { rank: legs.keyword } : {}),
      strictMock<VectorLeg>({
        ...(legs.semantic ? { rank: legs.semantic } : {}),
        ...(legs.across ? { rankAcross: legs.across } : {}),
      }),
      queryVectors,
      config,
    ),
    strictMock<ChunkReadsRepository>(legs.chunks ? { chunks: legs.chunks } : {}),
    strictMock<IndexStateRepository>({
      of: (_read, id) => Promise.resolve({ ...index, ...indexes[id] }),
    }),
    strictMock<SearchReads>({ statements: () => () => Promise.resolve([]) }),
    strictMock<DatasetsService>({
      get: (_caller, id) =>
        Promise.resolve(
          (id === dataset.id ? dataset : { ...dataset, id, seq: id.slice(3) }) as DatasetEntity,
        ),
    }),
    strictMock<EmbeddingService>({
      current: () => provider,
      forModel: ({ name }) => (name === provider.model ? provider : null),
    }),
    queryVectors,
    strictMock<RerankService>({ current: () => reranker }),
    strictMock<Highlights>({}),
    config,
    { candidates: 20 },
  );
  return { search, embedQuery, embedQueries };
}

const row = (seq: string): ChunkRow => ({
  seq,
  id: `chk_${seq}`,
  content: `passage ${seq}`,
  documentId: 'doc_1',
  ordinal: Number(seq),
  page: null,
  charStart: 0,
  charEnd: 10,
  metadata: {},
  filename: null,
});

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

  it('runs a search again when its legs read different versions, up to three times, then answers', async () => {
    // The legs' counts of removed chunks disagree on the first attempt, agree on the second.
    const removed = [
      ['1', '2'],
      ['2', '2'],
    ];
    let attempt = 0;
    const semantic = jest.fn(() =>
      Promise.resolve([
        { chunkSeq: '1', score: 1, relevance: 1, removed: removed[attempt][0], row: row('1') },
      ]),
    );
    const keyword = jest.fn(() =>
      Promise.resolve([
        { chunkSeq: '2', score: 3, relevance: 1, removed: removed[attempt++][1], row: row('2') },
      ]),
    );
    const { search } = setUp({ legs: { semantic, keyword } });
    const results = await search.query(ANONYMOUS, { ...OPTIONS, dataset_id: 'ds_1', query: 'energy' });
    expect(semantic).toHaveBeenCalledTimes(2);
    expect(results.map((result) => result.chunk_id).sort()).toEqual(['chk_1', 'chk_2']);

    // Disagreeing every time: the third attempt answers all the same.
    const always = setUp({
      legs: {
        semantic: jest.fn(() =>
          Promise.resolve([{ chunkSeq: '1', score: 1, relevance: 1, removed: '1', row: row('1') }]),
        ),
        keyword: jest.fn(() =>
          Promise.resolve([{ chunkSeq: '2', score: 3, relevance: 1, removed: '2', row: row('2') }]),
        ),
      },
    });
    expect(
      await always.search.query(ANONYMOUS, { ...OPTIONS, dataset_id: 'ds_1', query: 'energy' }),
    ).toHaveLength(2);
  });

  it('runs a search again when a chunk it ranked is gone when its row is read', async () => {
    // Ranked without its row by the keyword leg: read after the fusion, found on the second attempt.
    const chunks = jest
      .fn<ChunkReadsRepository['chunks']>()
      .mockResolvedValueOnce(new Map())
      .mockResolvedValue(new Map([['7', row('7')]]));
    const keyword = jest.fn(() => Promise.resolve([{ chunkSeq: '7', score: 1, relevance: 1, removed: '0' }]));
    const { search } = setUp({ legs: { semantic: () => Promise.resolve([]), keyword, chunks } });
    const results = await search.query(ANONYMOUS, { ...OPTIONS, dataset_id: 'ds_1', query: 'energy' });
    expect(keyword).toHaveBeenCalledTimes(2);
    expect(results.map((result) => result.chunk_id)).toEqual(['chk_7']);
  });

  describe('over several datasets', () => {
    const hit = (seq: string): LegHit => ({
      chunkSeq: seq,
      score: 0.9,
      relevance: 0.9,
      removed: '0',
      row: row(seq),
    });
    // ds_2 shares ds_1's model; ds_3 has an HNSW index of its own; ds_4's model is not the service's.
    const indexes = {
      ds_2: {},
      ds_3: { vectorIndexDimensions: 2 },
      ds_4: { embeddingModel: 'retired' },
    };
    const request = { ...OPTIONS, dataset_ids: ['ds_1', 'ds_2', 'ds_3', 'ds_4'], query: 'energy' };

    it('ranks the vectors of the datasets of one model together, in one walk', async () => {
      const across = jest.fn<VectorLeg['rankAcross']>(() =>
        Promise.resolve(
          new Map([
            ['1', [hit('11')]],
            ['2', [hit('21')]],
          ]),
        ),
      );
      const semantic = jest.fn<VectorLeg['rank']>(() => Promise.resolve([hit('31')]));
      const { search } = setUp({ legs: { semantic, across, keyword: () => Promise.resolve([]) }, indexes });
      const results = await search.query(ANONYMOUS, request);
      expect(across).toHaveBeenCalledTimes(1);
      expect(across.mock.calls[0][0].map(({ seq }) => seq)).toEqual(['1', '2']);
      expect(across.mock.calls[0][3]).toMatchObject({ candidates: 50, shown: OPTIONS.limit });
      // The dataset with an index of its own walks it alone; the one of another model runs no vector leg.
      expect(semantic).toHaveBeenCalledTimes(1);
      expect(semantic.mock.calls[0][0]).toMatchObject({ seq: '3', ownIndex: true });
      expect(results.map((result) => [result.chunk_id, result.dataset_id])).toEqual([
        ['chk_11', 'ds_1'],
        ['chk_21', 'ds_2'],
        ['chk_31', 'ds_3'],
      ]);
    });

    it('ranks each dataset alone when one walk would not serve them', async () => {
      const across = jest.fn<VectorLeg['rankAcross']>(() => Promise.resolve(null));
      const semantic = jest.fn<VectorLeg['rank']>((dataset) => Promise.resolve([hit(`${dataset.seq}1`)]));
      const { search } = setUp({ legs: { semantic, across, keyword: () => Promise.resolve([]) }, indexes });
      const results = await search.query(ANONYMOUS, request);
      expect(across).toHaveBeenCalledTimes(1);
      expect(semantic.mock.calls.map(([dataset]) => dataset.seq).sort()).toEqual(['1', '2', '3']);
      expect(results.map((result) => result.chunk_id)).toEqual(['chk_11', 'chk_21', 'chk_31']);
    });

    it('runs no shared walk for a keyword search', async () => {
      const across = jest.fn<VectorLeg['rankAcross']>(() => Promise.resolve(null));
      const { search } = setUp({ legs: { across, keyword: () => Promise.resolve([]) }, indexes });
      expect(await search.query(ANONYMOUS, { ...request, mode: 'keyword' })).toEqual([]);
      expect(across).not.toHaveBeenCalled();
    });
  });

  it('embeds a batch’s distinct queries in one call where the provider takes several', async () => {
    const semantic = jest.fn((_dataset: unknown, vector: Promise<number[]>) =>
      vector.then((v): LegHit[] => [
        { chunkSeq: String(v[0]), score: 1, relevance: 1, row: row(String(v[0])) },
      ]),
    );
    const { search, embedQuery, embedQueries } = setUp({
      legs: { semantic, keyword: () => Promise.resolve([]) },
      batches: true,
    });
    const queries = ['one', 'three', 'one'];
    const answers = await search.batch(ANONYMOUS, { ...OPTIONS, dataset_id: 'ds_1', queries });
    expect(embedQuery).not.toHaveBeenCalled();
    expect(embedQueries).toHaveBeenCalledTimes(1);
    expect(embedQueries).toHaveBeenCalledWith(['one', 'three'], expect.any(AbortSignal));
    // Each query's leg had its own vector: the chunk named by the query's length.
    expect(answers.map((answer) => answer.results.map((r) => r.chunk_id))).toEqual([
      ['chk_3'],
      ['chk_5'],
      ['chk_3'],
    ]);
  });
  it('reads the rows a reranker scores, and no more, from the legs or after the fusion', async () => {
    // Each leg ranks 20 chunks of its own close together, then chunk 99 just below them, then 10 far
    // below: 99 is 21st in both legs, and first in the fusion, where a chunk one leg did not rank
    // takes that leg's lowest score.
    const ranking = (prefix: string) => [
      ...Array.from({ length: 20 }, (_, i) => [`${prefix}${i + 1}`, 1 - i / 1000] as const),
      ['99', 0.97] as const,
      ...Array.from({ length: 10 }, (_, i) => [`${prefix}${i + 21}`, 0.1 - i / 100] as const),
    ];
    const leg = (prefix: string) =>
      jest.fn((_dataset: unknown, _input: unknown, request: LegRequest) =>
        Promise.resolve(
          ranking(prefix).map(([seq, score], i): LegHit => ({
            chunkSeq: seq,
            score,
            relevance: score,
            row: i < request.shown ? row(seq) : undefined,
          })),
        ),
      );
    const semantic = leg('1');
    const keyword = jest.fn((dataset: unknown, query: string, _bm25: unknown, request: LegRequest) =>
      leg('2')(dataset, query, request),
    );
    const chunks = jest.fn((_read: unknown, _dataset: string, seqs: string[]) =>
      Promise.resolve(new Map(seqs.map((seq) => [seq, row(seq)]))),
    );
    const score = jest.fn((_query: string, passages: string[], _signal?: AbortSignal) =>
      Promise.resolve(passages.map((passage) => (passage === 'passage 99' ? 0.9 : 0.1))),
    );
    const { search } = setUp({
      legs: { semantic, keyword, chunks },
      reranker: { name: 'fake', model: 'fake', score },
    });

    const results = await search.query(ANONYMOUS, {
      ...OPTIONS,
      rerank: true,
      dataset_id: 'ds_1',
      query: 'energy',
    });

    // Each leg ranks its 50 candidates and brings the rows of the 20 the reranker reads.
    for (const request of [semantic.mock.calls[0][2], keyword.mock.calls[0][3]]) {
      expect(request).toMatchObject({ candidates: 50, shown: 20 });
    }
    // The fusion's first, ranked 21st by both legs, is the one row read afterwards.
    expect(chunks.mock.calls.map(([, , seqs]) => seqs)).toEqual([['99']]);
    const passages = score.mock.calls[0][1];
    expect(passages).toHaveLength(20);
    expect(passages[0]).toBe('passage 99');
    expect(results.map(({ chunk_id, score }) => [chunk_id, score])[0]).toEqual(['chk_99', 0.9]);
    expect(results).toHaveLength(5);
  });
});
