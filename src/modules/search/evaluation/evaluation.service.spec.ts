import { ANONYMOUS } from 'src/modules/auth/auth.types.js';
import type { ChunkReadsRepository, ChunkRow } from 'src/modules/chunk-index/chunk-reads.repository.js';
import { type IndexState, IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import type { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import type { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import type { EvaluationRequestDto } from 'src/modules/search/dto/evaluation.dto.js';
import type { FusionWeightsDto } from 'src/modules/search/dto/search.dto.js';
import { EVALUATION_DEPTH, EvaluationService } from 'src/modules/search/evaluation/evaluation.service.js';
import { figuresOf, rankedDocuments } from 'src/modules/search/evaluation/metrics.js';
import type { KeywordLeg } from 'src/modules/search/keyword-leg.js';
import { QueryVectors } from 'src/modules/search/query-vectors.js';
import type { RerankService } from 'src/modules/search/rerank/rerank.service.js';
import type { SearchConfig } from 'src/modules/search/search.config.js';
import { SearchLegs } from 'src/modules/search/search-legs.js';
import type { SearchReads } from 'src/modules/search/search-reads.js';
import type { Highlights } from 'src/modules/search/highlights.js';
import { SearchService } from 'src/modules/search/search.service.js';
import type { LegHit, LegRequest } from 'src/modules/search/search.types.js';
import type { VectorLeg } from 'src/modules/search/vector-leg.js';
import { strictMock } from '../../../../test/utils/strict-mock.js';

/** A seeded generator of numbers in [0, 1) (mulberry32), so that the legs' rankings are the same each run. */
function generator(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 1,500 chunks of 400 documents (several chunks each), in an order of the leg's own, best first. */
function legRanking(seed: number, scale: number): { chunkSeq: string; score: number }[] {
  const next = generator(seed);
  return Array.from({ length: 1_500 }, (_, i) => ({ chunkSeq: String(i + 1), score: scale * next() }))
    .sort((a, b) => b.score - a.score || Number(a.chunkSeq) - Number(b.chunkSeq))
    .filter((_, i) => i < 1_400);
}

const documentOf = (seq: string) => `doc_${Number(seq) % 400}`;

const row = (seq: string, metadata?: Record<string, unknown>): ChunkRow => ({
  seq,
  id: `chk_${seq}`,
  content: `passage ${seq}`,
  documentId: documentOf(seq),
  ordinal: 0,
  page: null,
  charStart: 0,
  charEnd: 10,
  ...(metadata ? { metadata, filename: null } : {}),
});

/**
 * A search service and an evaluation over the same legs, as the service has them: the keyword leg
 * ranks BM25-like scores and brings the rows of its first `shown`; the vector leg cosines, every hit
 * with its row and the first `shown` with their documents' metadata.
 */
async function setUp() {
  const keywordRanking = legRanking(1, 20);
  const semanticRanking = legRanking(2, 1);
  const keyword = (_d: unknown, _q: string, _b: unknown, { candidates, shown }: LegRequest) =>
    Promise.resolve(
      keywordRanking.slice(0, candidates).map((hit, i): LegHit => ({
        ...hit,
        relevance: 0.5,
        ...(i < shown ? { row: row(hit.chunkSeq, {}) } : {}),
      })),
    );
  const semantic = (_d: unknown, _v: unknown, { candidates, shown }: LegRequest) =>
    Promise.resolve(
      semanticRanking.slice(0, candidates).map((hit, i): LegHit => ({
        ...hit,
        relevance: 0.5,
        row: row(hit.chunkSeq, i < shown ? {} : undefined),
      })),
    );
  const provider = strictMock<EmbeddingProvider>({
    model: 'm',
    dimensions: 2,
    embedQuery: () => Promise.resolve([1, 0]),
    embedQueries: undefined,
  });
  // A dataset's state as the repository reads it, with vectors of the provider's model.
  const index: IndexState = {
    ...(await new IndexStateRepository().of(() => Promise.resolve([]), 'ds_1')),
    chunkCount: 1_500,
    totalChunkLength: 15_000,
    embeddingModel: 'm',
    embeddingDimensions: 2,
    fusion: { keyword: 0.7, semantic: 0.3 },
  };
  const config = strictMock<SearchConfig>({ timeoutMs: 5_000, batchConcurrency: 2, bm25K1: 1.2, bm25B: 0.6 });
  // The provider of the moment is the one of the dataset's model too.
  const embedding = { current: () => provider, forModel: () => provider };
  const queryVectors = new QueryVectors(strictMock<EmbeddingService>(embedding));
  const legs = new SearchLegs(
    strictMock<KeywordLeg>({ rank: keyword }),
    strictMock<VectorLeg>({ rank: semantic }),
    queryVectors,
    config,
  );
  const chunkReads = strictMock<ChunkReadsRepository>({
    chunks: (_read, _dataset, seqs) => Promise.resolve(new Map(seqs.map((seq) => [seq, row(seq, {})]))),
    documentsOfChunks: (_read, _dataset, seqs) =>
      Promise.resolve(new Map(seqs.map((seq) => [seq, documentOf(seq)]))),
    documentsAmong: (_read, _dataset, ids) => Promise.resolve(new Set(ids)),
  });
  const reads = strictMock<SearchReads>({ statements: () => () => Promise.resolve([]) });
  const datasets = strictMock<DatasetsService>({
    get: () => Promise.resolve({ id: 'ds_1', seq: '1', language: 'english' } as DatasetEntity),
  });
  const search = new SearchService(
    legs,
    chunkReads,
    strictMock<IndexStateRepository>({ of: () => Promise.resolve(index) }),
    reads,
    datasets,
    strictMock<EmbeddingService>(embedding),
    queryVectors,
    strictMock<RerankService>({ current: () => null }),
    strictMock<Highlights>({}),
    config,
    { candidates: 20 },
  );
  return { search, evaluation: new EvaluationService(search, datasets, legs, chunkReads, reads, config) };
}

describe('EvaluationService', () => {
  it('ranks each mode and weight as a search of 300 results answers it', async () => {
    const { search, evaluation } = await setUp();
    // Graded judgements spread over the rankings: a change of order anywhere in the first 100
    // documents moves a figure.
    const next = generator(3);
    const judged = Array.from({ length: 40 }, () => Math.floor(next() * 400));
    const relevant = new Map(judged.map((n, i) => [`doc_${n}`, 1 + (i % 3)]));
    const request: EvaluationRequestDto = {
      queries: [
        {
          query: 'energy',
          relevant: [...relevant].map(([document_id, grade]) => ({ document_id, grade })),
        },
      ],
      weights: [{ keyword: 0.9, semantic: 0.1 }],
      per_query: true,
    };
    const answer = await evaluation.evaluate(ANONYMOUS, 'ds_1', request);
    const rows = answer.per_query![0].modes;
    expect(rows.map((r) => [r.mode, r.weights_source, r.weights?.semantic])).toEqual([
      ['keyword', undefined, undefined],
      ['semantic', undefined, undefined],
      ['hybrid', 'dataset', 0.3],
      ['hybrid', 'request', 0.1],
      ['hybrid', 'grid', 0],
      ['hybrid', 'grid', 0.5],
      ['hybrid', 'grid', 0.7],
      ['hybrid', 'grid', 1],
    ]);
    for (const row of rows) {
      const weights: FusionWeightsDto | undefined =
        row.weights_source === 'request'
          ? request.weights![0]
          : row.weights_source === 'grid'
            ? { semantic: row.weights!.semantic }
            : undefined;
      const results = await search.query(ANONYMOUS, {
        dataset_id: 'ds_1',
        query: 'energy',
        limit: EVALUATION_DEPTH,
        mode: row.mode,
        weights,
        rerank: false,
        explain: false,
        highlight: false,
        min_score: 0,
      });
      expect(results).toHaveLength(EVALUATION_DEPTH);
      const ranking = rankedDocuments(
        results.map((result) => result.document_id),
        EVALUATION_DEPTH,
      );
      const { ndcg_at_10, recall_at_100, mrr_at_10 } = row;
      expect([row.mode, row.weights, { ndcg_at_10, recall_at_100, mrr_at_10 }]).toEqual([
        row.mode,
        row.weights,
        figuresOf(ranking, relevant),
      ]);
    }
    // The rankings differ, so that the figures tell them apart.
    expect(new Set(rows.map((r) => r.ndcg_at_10)).size).toBeGreaterThan(4);
  });
});
