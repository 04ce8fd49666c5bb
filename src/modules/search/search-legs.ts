import { Inject, Injectable } from '@nestjs/common';
import type { PassingDocuments } from 'src/modules/chunk-index/chunk-reads.repository.js';
import type { IndexState } from 'src/modules/chunk-index/index-state.repository.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { KeywordLeg } from 'src/modules/search/keyword-leg.js';
import { QueryVectors } from 'src/modules/search/query-vectors.js';
import { SEARCH_CONFIG, type SearchConfig } from 'src/modules/search/search.config.js';
import type { LegHit, LegRequest } from 'src/modules/search/search.types.js';
import { VectorLeg } from 'src/modules/search/vector-leg.js';

/** Each leg contributes its top max(50, 4 × limit) candidates to the fusion. */
export const MIN_CANDIDATES = 50;

/** The candidates each leg contributes to a hybrid search of `limit` results. */
export function hybridCandidates(limit: number): number {
  return Math.max(MIN_CANDIDATES, 4 * limit);
}

/** Both legs of a search over one dataset's index: what a search fuses, and what the tuning judges. */
@Injectable()
export class SearchLegs {
  constructor(
    private readonly keywordLeg: KeywordLeg,
    private readonly vectorLeg: VectorLeg,
    private readonly queryVectors: QueryVectors,
    @Inject(SEARCH_CONFIG) private readonly config: Pick<SearchConfig, 'bm25K1' | 'bm25B'>,
  ) {}

  /**
   * Each leg's candidates for `query` in the dataset, best first, for the legs asked for (`run`): the
   * vector leg ranks at least `MIN_CANDIDATES`, so that its HNSW search keeps its recall.
   */
  async rank(
    { dataset, index }: { dataset: Pick<DatasetEntity, 'id' | 'seq' | 'language'>; index: IndexState },
    query: string,
    run: { semantic: boolean; keyword: boolean },
    request: LegRequest & {
      vector?: Promise<number[]>;
      /** The vector leg's hits ranked with other datasets' (`VectorLeg.rankAcross`), or none. */
      semanticHits?: Promise<LegHit[] | undefined>;
    },
  ): Promise<{ semantic?: LegHit[]; keyword?: LegHit[] }> {
    const { vector, semanticHits, ...leg } = request;
    const alone = () =>
      this.vectorLeg.rank(
        {
          id: dataset.id,
          seq: dataset.seq,
          chunks: index.chunkCount,
          dimensions: index.embeddingDimensions!,
          model: index.embeddingModel!,
          ownIndex: index.vectorIndexDimensions === index.embeddingDimensions,
        },
        vector ?? this.queryVectors.one(query, leg.deadline),
        { ...leg, candidates: Math.max(MIN_CANDIDATES, leg.candidates) },
      );
    const ranked = () => (semanticHits ? semanticHits.then((hits) => hits ?? alone()) : alone());
    const [semantic, keyword] = await Promise.all([
      run.semantic ? ranked() : undefined,
      run.keyword
        ? this.keywordLeg.rank(
            { id: dataset.id, seq: dataset.seq, language: dataset.language, chunkCount: index.chunkCount },
            query,
            { k1: this.config.bm25K1, b: this.config.bm25B },
            leg,
          )
        : undefined,
    ]);
    return { semantic, keyword };
  }

  /**
   * The vector leg of datasets of one model and dimension in one walk (`VectorLeg.rankAcross`): each
   * dataset's hits by its seq, or null when they are best ranked one by one.
   */
  rankVectorsAcross(
    datasets: {
      dataset: Pick<DatasetEntity, 'seq'>;
      index: IndexState;
      passing?: Promise<PassingDocuments>;
    }[],
    vector: Promise<number[]>,
    leg: Omit<LegRequest, 'passing'>,
  ): Promise<Map<string, LegHit[]> | null> {
    const [{ index }] = datasets;
    return this.vectorLeg.rankAcross(
      datasets.map(({ dataset, index, passing }) => ({
        seq: dataset.seq,
        chunks: index.chunkCount,
        passing,
      })),
      { model: index.embeddingModel!, dimensions: index.embeddingDimensions! },
      vector,
      { ...leg, candidates: Math.max(MIN_CANDIDATES, leg.candidates) },
    );
  }
}
