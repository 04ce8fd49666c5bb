import { setImmediate } from 'node:timers/promises';
import { Inject, Injectable } from '@nestjs/common';
import { mapConcurrently } from 'src/common/async/concurrency.js';
import { CommonErrors } from 'src/common/errors/app-error.js';
import type { Principal } from 'src/modules/auth/auth.types.js';
import { ChunkReadsRepository } from 'src/modules/chunk-index/chunk-reads.repository.js';
import type { IndexState } from 'src/modules/chunk-index/index-state.repository.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import {
  EVALUATION_LIMITS,
  type EvaluatedModeDto,
  type EvaluationRequestDto,
  type EvaluationResponseDto,
  type EvaluationWeightsSource,
} from 'src/modules/search/dto/evaluation.dto.js';
import type { FusionWeightsDto, SearchMode } from 'src/modules/search/dto/search.dto.js';
import { EvaluationErrors } from 'src/modules/search/evaluation/evaluation.errors.js';
import { type JudgedItem, judgedItems, relevantDocuments } from 'src/modules/search/evaluation/judgements.js';
import {
  type Figures,
  figuresOf,
  type Judgements,
  meanFigures,
  rankedDocuments,
} from 'src/modules/search/evaluation/metrics.js';
import { documentCondition, type ParsedFilter } from 'src/modules/search/filters.js';
import { EQUAL_WEIGHTS, fuse, type FusionWeights } from 'src/modules/search/fusion.js';
import { SEARCH_CONFIG, type SearchConfig } from 'src/modules/search/search.config.js';
import { withinSearchDeadline } from 'src/modules/search/search-deadline.js';
import { hybridCandidates, SearchLegs } from 'src/modules/search/search-legs.js';
import { SearchReads } from 'src/modules/search/search-reads.js';
import { round } from 'src/modules/search/search-results.js';
import { type PreparedSearch, requestedWeights, SearchService } from 'src/modules/search/search.service.js';
import type { LegHit } from 'src/modules/search/search.types.js';

/**
 * The chunks each ranking is measured on: those a search of 300 results returns, as the benchmark asks
 * the service for (`bench/relevance.mjs`), deep enough to hold 100 documents for Recall@100.
 */
export const EVALUATION_DEPTH = 300;

/** The semantic shares every evaluation judges hybrid search at, beside the dataset's own. */
export const WEIGHT_GRID = [0, 0.3, 0.5, 0.7, 1] as const;

/** Metadata conditions resolved in one statement. */
const CONDITIONS_PER_STATEMENT = 50;

/** A way of ranking that is measured: a mode, and a hybrid one's weights and where they come from. */
interface Ranking {
  mode: SearchMode;
  weights?: FusionWeights;
  source?: EvaluationWeightsSource;
}

/**
 * Measures the dataset's retrieval on judged queries (docs/search.md, Evaluating retrieval on your own
 * data): each query is searched once, both legs at the depth of a hybrid search of `EVALUATION_DEPTH`
 * results, and every mode and weight is ranked from those two legs by the search's own fusion, so that
 * each ranking is the one a search of the dataset would answer. The figures are document-level
 * nDCG@10, Recall@100 and MRR@10, as the benchmark computes them.
 */
@Injectable()
export class EvaluationService {
  constructor(
    private readonly search: SearchService,
    private readonly datasets: DatasetsService,
    private readonly legs: SearchLegs,
    private readonly chunkReads: ChunkReadsRepository,
    private readonly reads: SearchReads,
    @Inject(SEARCH_CONFIG) private readonly config: Pick<SearchConfig, 'timeoutMs' | 'batchConcurrency'>,
  ) {}

  /**
   * The figures of each mode, means over the queries, and each query's with `per_query`. Everything
   * the request says is checked before any work is done, then the whole evaluation runs within the
   * search timeout (504 query_timeout), as a batch does; the documents the judgements name are checked
   * against the dataset once it is known to be visible to the caller (else 404), and before any query
   * is embedded.
   */
  async evaluate(
    caller: Principal,
    datasetId: string,
    request: EvaluationRequestDto,
  ): Promise<EvaluationResponseDto> {
    const started = performance.now();
    const { queries: judged } = request;
    if (judged.length > EVALUATION_LIMITS.queries) throw EvaluationErrors.tooManyQueries(judged.length);
    if (judged.length === 0)
      throw CommonErrors.validation([{ field: 'queries', issue: 'must hold at least one judged query' }]);
    judged.forEach(({ query }, i) => this.search.checkQuery(query, `queries[${i}].query`));
    const items = judgedItems(judged);
    const queries = judged.map(({ query }) => query);

    const measured = await withinSearchDeadline(this.config.timeoutMs, async (deadline) => {
      // The judged documents are checked before any query is embedded: a request refused for a
      // mistyped id costs no embeddings.
      const dataset = await this.datasets.get(caller, datasetId);
      const relevant = await this.relevant(dataset.id, items, deadline);
      const options = { mode: 'hybrid', limit: EVALUATION_DEPTH, rerank: false, explain: false } as const;
      const prepared = await this.search.prepare(
        caller,
        datasetId,
        { ...options, filters: request.filters },
        queries,
        { deadline },
      );
      const unavailable = this.search.semanticUnavailable(prepared.index);
      const rankings: Ranking[] = unavailable
        ? [{ mode: 'keyword' }]
        : [{ mode: 'keyword' }, { mode: 'semantic' }, ...hybridRankings(prepared.index, request.weights)];
      const figures = await mapConcurrently(
        queries.map((_, i) => i),
        this.config.batchConcurrency,
        (i) => this.measure(prepared, queries[i], rankings, relevant[i], !unavailable, deadline),
      );
      return { dataset: prepared.dataset.id, rankings, relevant, figures, unavailable };
    });

    const { rankings, relevant, figures, unavailable } = measured;
    const perQuery = request.per_query
      ? queries.map((query, i) => ({
          query,
          relevant_documents: relevant[i].size,
          modes: rankings.map((ranking, j) => ({ ...described(ranking), ...figures[i][j] })),
        }))
      : undefined;
    return {
      dataset_id: measured.dataset,
      queries: queries.length,
      modes: rankings.map((ranking, j) => ({
        ...described(ranking),
        ...meanFigures(figures.map((query) => query[j])),
      })),
      ...(unavailable ? { semantic_unavailable: unavailable } : {}),
      ...(perQuery ? { per_query: perQuery } : {}),
      // As a search's query_time_ms is: the time of all the work before the answer.
      evaluation_time_ms: Math.round(performance.now() - started),
    };
  }

  /**
   * Each query's relevant documents: the judged ids that are documents of the dataset, and the
   * documents each metadata item matches (`CONDITIONS_PER_STATEMENT` items a statement).
   */
  private async relevant(
    datasetId: string,
    items: JudgedItem[][],
    deadline: AbortSignal,
  ): Promise<Judgements[]> {
    const read = this.reads.statements(deadline);
    const all = items.flat();
    const ids = [...new Set(all.flatMap((item) => ('documentId' in item ? [item.documentId] : [])))];
    const byMetadata = all.filter(
      (item): item is JudgedItem & { condition: ParsedFilter } => 'condition' in item,
    );
    const groups = Array.from({ length: Math.ceil(byMetadata.length / CONDITIONS_PER_STATEMENT) }, (_, g) =>
      byMetadata.slice(g * CONDITIONS_PER_STATEMENT, (g + 1) * CONDITIONS_PER_STATEMENT),
    );
    const [existing, matched] = await Promise.all([
      this.chunkReads.documentsAmong(read, datasetId, ids),
      mapConcurrently(groups, this.config.batchConcurrency, (group) =>
        this.chunkReads.documentsPassingEach(
          read,
          datasetId,
          group.map((item) => documentCondition(item.condition)),
          // One more than a query may hold, so that a query past it is told so.
          EVALUATION_LIMITS.relevantPerQuery + 1,
        ),
      ),
    ]);
    const found = matched.flat();
    const named = new Map(byMetadata.map((item, k) => [item, found[k]]));
    return relevantDocuments(items, (item) =>
      'documentId' in item ? (existing.has(item.documentId) ? [item.documentId] : []) : named.get(item)!,
    );
  }

  /** One query's figures in each ranking, from one run of each leg. */
  private async measure(
    prepared: PreparedSearch,
    query: string,
    rankings: Ranking[],
    relevant: Judgements,
    semantic: boolean,
    deadline: AbortSignal,
  ): Promise<Figures[]> {
    const { dataset, index } = prepared;
    const legs = await this.legs.rank(
      { dataset, index },
      query,
      { semantic, keyword: true },
      {
        filter: prepared.filter,
        passing: prepared.passing,
        // As a hybrid search of EVALUATION_DEPTH results ranks them; a leg alone ranks fewer, the
        // first of these.
        candidates: hybridCandidates(EVALUATION_DEPTH),
        // No rows to show: the documents of the chunks ranked are read below, without their text.
        shown: 0,
        deadline,
        vector: prepared.vectors.get(query),
      },
    );
    const documents = await this.documentsOf(dataset.seq, legs, deadline);
    const figures: Figures[] = [];
    for (const { mode, weights } of rankings) {
      // A fusion of two legs of 1,200 candidates takes a few milliseconds of the main thread: other
      // requests are served between two.
      await setImmediate();
      deadline.throwIfAborted();
      const ranked = fuse(mode === 'hybrid' ? legs : { [mode]: legs[mode] }, weights);
      const chunkDocuments = ranked.map((entry) => documents.get(entry.chunkSeq));
      figures.push(figuresOf(rankedDocuments(chunkDocuments, EVALUATION_DEPTH), relevant));
    }
    return figures;
  }

  /**
   * The document of each chunk the legs ranked: from the hits' rows (the vector leg's, and the keyword
   * leg's under a filter), the others read in one statement. A chunk deleted since has none.
   */
  private async documentsOf(
    datasetSeq: string,
    legs: { semantic?: LegHit[]; keyword?: LegHit[] },
    deadline: AbortSignal,
  ): Promise<Map<string, string>> {
    const documents = new Map<string, string>();
    const hits = [...(legs.semantic ?? []), ...(legs.keyword ?? [])];
    for (const hit of hits) if (hit.row) documents.set(hit.chunkSeq, hit.row.documentId);
    const missing = [...new Set(hits.map((hit) => hit.chunkSeq).filter((seq) => !documents.has(seq)))];
    const read = await this.chunkReads.documentsOfChunks(
      this.reads.statements(deadline),
      datasetSeq,
      missing,
    );
    for (const [seq, document] of read) documents.set(seq, document);
    return documents;
  }
}

/**
 * The hybrid weights judged: those the dataset's searches use (its own, else equal ones), the
 * request's, then the grid's, each once.
 */
function hybridRankings(index: IndexState, requested: FusionWeightsDto[] = []): Ranking[] {
  const rankings: Ranking[] = [];
  const add = (weights: FusionWeights, source: EvaluationWeightsSource) => {
    const same = (other: FusionWeights) =>
      round(other.keyword) === round(weights.keyword) && round(other.semantic) === round(weights.semantic);
    if (!rankings.some((ranking) => same(ranking.weights!)))
      rankings.push({ mode: 'hybrid', weights, source });
  };
  add(index.fusion ?? EQUAL_WEIGHTS, index.fusion ? 'dataset' : 'default');
  for (const weights of requested) add(requestedWeights(weights), 'request');
  // As a search asked with `{"semantic": share}` weighs the legs.
  for (const share of WEIGHT_GRID) add(requestedWeights({ semantic: share }), 'grid');
  return rankings;
}

/** A ranking as the answer names it. */
function described({ mode, weights, source }: Ranking): Omit<EvaluatedModeDto, keyof Figures> {
  if (!weights) return { mode };
  return {
    mode,
    weights: { keyword: round(weights.keyword), semantic: round(weights.semantic) },
    weights_source: source,
  };
}
