import { Inject, Injectable } from '@nestjs/common';
import type { IndexState } from 'src/modules/chunk-index/index-state.repository.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { KeywordLeg } from 'src/modules/search/keyword-leg.js';
import { QueryVectors } from 'src/modules/search/query-vectors.js';
import { SEARCH_CONFIG, type SearchConfig } from 'src/modules/search/search.config.js';
import type { ExactScores } from 'src/modules/search/fusion.js';
import type { LegHit, LegRequest } from 'src/modules/search/search.types.js';
import { VectorLeg } from 'src/modules/search/vector-leg.js';

/** Each leg contributes its top max(50, 4 × limit) candidates to the fusion. */
export const MIN_CANDIDATES = 50;

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
    request: LegRequest & { vector?: Promise<number[]> },
  ): Promise<RankedLegs> {
    const { vector: given, ...leg } = request;
    const vector = run.semantic ? (given ?? this.queryVectors.one(query, leg.deadline)) : undefined;
    const vectorDataset = {
      id: dataset.id,
      seq: dataset.seq,
      chunks: index.chunkCount,
      dimensions: index.embeddingDimensions!,
      model: index.embeddingModel!,
      ownIndex: index.vectorIndexDimensions === index.embeddingDimensions,
    };
    const [semantic, keyword] = await Promise.all([
      vector
        ? this.vectorLeg.rank(vectorDataset, vector, {
            ...leg,
            candidates: Math.max(MIN_CANDIDATES, leg.candidates),
          })
        : undefined,
      run.keyword
        ? this.keywordLeg.rankScoring(
            { id: dataset.id, seq: dataset.seq, language: dataset.language, chunkCount: index.chunkCount },
            query,
            { k1: this.config.bm25K1, b: this.config.bm25B },
            leg,
          )
        : undefined,
    ]);
    if (!semantic || !keyword || !vector) return { semantic, keyword: keyword?.hits };
    // Each leg's score of the chunks only the other ranked: the fusion then weighs every candidate by
    // both legs' evidence, rather than by a guess for the leg that left it out.
    const unranked = (hits: LegHit[], by: LegHit[]) => {
      const ranked = new Set(by.map((hit) => hit.chunkSeq));
      return hits.map((hit) => hit.chunkSeq).filter((seq) => !ranked.has(seq));
    };
    const semanticScores = await this.vectorLeg.scoreOf(
      vectorDataset,
      vector,
      unranked(keyword.hits, semantic),
      leg.deadline,
    );
    return {
      semantic,
      keyword: keyword.hits,
      exact: { semantic: semanticScores, keyword: keyword.scoreOf(unranked(semantic, keyword.hits)) },
    };
  }
}

/**
 * The legs' candidates, and when both ran, each leg's own score of the candidates only the other one
 * ranked (`exact`: a chunk without a vector has no semantic score there).
 */
export interface RankedLegs {
  semantic?: LegHit[];
  keyword?: LegHit[];
  exact?: ExactScores;
}
