import { Inject, Injectable } from '@nestjs/common';
import { mapConcurrently } from 'src/common/async/concurrency.js';
import { type AppError, CommonErrors } from 'src/common/errors/app-error.js';
import { codePointCount, isVisibleText, stringIssue } from 'src/common/validation/json-value.js';
import { RERANK_CONFIG, type RerankConfig } from 'src/modules/search/rerank/rerank.config.js';
import { SEARCH_CONFIG, type SearchConfig } from 'src/modules/search/search.config.js';
import type { Principal } from 'src/modules/auth/auth.types.js';
import {
  type ChunkRow,
  ChunkReadsRepository,
  type PassingDocuments,
} from 'src/modules/chunk-index/chunk-reads.repository.js';
import { type IndexState, IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import type {
  BatchQueryDto,
  QueryDto,
  SearchMode,
  SearchResultDto,
  WeightsSource,
} from 'src/modules/search/dto/search.dto.js';
import { documentCondition, type ParsedFilter, parseFilters } from 'src/modules/search/filters.js';
import { RerankService } from 'src/modules/search/rerank/rerank.service.js';
import { SEARCH_LIMITS, SearchErrors } from 'src/modules/search/search.errors.js';
import { EQUAL_WEIGHTS, fuse, type FusionWeights, withRows } from 'src/modules/search/fusion.js';
import { round, toResult } from 'src/modules/search/search-results.js';
import { withinSearchDeadline } from 'src/modules/search/search-deadline.js';
import type { EarlyVector, LegHit } from 'src/modules/search/search.types.js';
import { hybridCandidates, SearchLegs } from 'src/modules/search/search-legs.js';
import { SearchReads } from 'src/modules/search/search-reads.js';
import { Highlights } from 'src/modules/search/highlights.js';
import { givenUp, QueryVectors } from 'src/modules/search/query-vectors.js';

/** Runs of a search at most, while what it reads changes under it (`SearchService.search`). */
const VERSION_ATTEMPTS = 3;

export interface SearchOptions {
  limit: number;
  rerank: boolean;
  filters?: Record<string, unknown>;
  mode: SearchMode;
  explain: boolean;
  /** Results scoring below it are left out (0 by default: none). */
  min_score?: number;
  /** How much each leg counts in hybrid mode; the dataset's own when left out. */
  weights?: { keyword?: number; semantic?: number };
  /** At most this many results of one document, its best (none by default). */
  max_per_document?: number;
  /** Add to each result the spans of its content that matched the query (`Highlights`). */
  highlight?: boolean;
}

/**
 * A search ready to run: the dataset and its index's state, and the queries' embeddings under way
 * (none in keyword mode).
 */
export interface PreparedSearch {
  dataset: DatasetEntity;
  index: IndexState;
  vectors: Map<string, Promise<number[]>>;
  filter: ParsedFilter;
  /** Under filters, when the vector leg may run: the documents that pass them (`LegRequest.passing`). */
  passing?: Promise<PassingDocuments>;
}

@Injectable()
export class SearchService {
  constructor(
    private readonly legs: SearchLegs,
    private readonly chunkReads: ChunkReadsRepository,
    private readonly indexState: IndexStateRepository,
    private readonly reads: SearchReads,
    private readonly datasets: DatasetsService,
    private readonly embedding: EmbeddingService,
    private readonly queryVectors: QueryVectors,
    private readonly reranking: RerankService,
    private readonly highlights: Highlights,
    @Inject(SEARCH_CONFIG) private readonly config: SearchConfig,
    @Inject(RERANK_CONFIG) private readonly rerank: Pick<RerankConfig, 'candidates'>,
  ) {}

  /**
   * One query's results: the query checked, then searched within the deadline (`withinDeadline`), in
   * its dataset or across its `dataset_ids` (`across`).
   */
  async query(caller: Principal, request: QueryDto, early?: EarlyVector): Promise<SearchResultDto[]> {
    this.checkQuery(request.query, 'query');
    const named = datasetsOf(request);
    return this.withinDeadline(async (deadline) => {
      const prepared = Array.isArray(named)
        ? await this.prepareAll(caller, named, request, [request.query], { early, deadline })
        : await this.prepare(caller, named, request, [request.query], { early, deadline });
      const results = Array.isArray(prepared)
        ? await this.across(prepared, request.query, request, deadline)
        : await this.search(prepared, request.query, request, deadline);
      if (request.highlight) await this.highlight(prepared, [{ query: request.query, results }], deadline);
      return results;
    });
  }

  /**
   * Each query's results, in the queries' order: all checked first, then searched together within
   * one deadline, `SEARCH_BATCH_CONCURRENCY` at a time. `onAnswered` hears how many are done.
   */
  async batch(
    caller: Principal,
    request: BatchQueryDto,
    onAnswered?: (answered: number) => void,
  ): Promise<{ query: string; results: SearchResultDto[] }[]> {
    const { queries } = request;
    if (queries.length > SEARCH_LIMITS.batchQueries) throw SearchErrors.tooManyQueries(queries.length);
    if (queries.length === 0)
      throw CommonErrors.validation([{ field: 'queries', issue: 'must hold at least one query' }]);
    queries.forEach((query, i) => this.checkQuery(query, `queries[${i}]`));
    const named = datasetsOf(request);
    return this.withinDeadline(async (deadline) => {
      const prepared = Array.isArray(named)
        ? await this.prepareAll(caller, named, request, queries, { deadline })
        : await this.prepare(caller, named, request, queries, { deadline });
      let answered = 0;
      const answers = await mapConcurrently(queries, this.config.batchConcurrency, async (query) => {
        const results = Array.isArray(prepared)
          ? await this.across(prepared, query, request, deadline)
          : await this.search(prepared, query, request, deadline);
        onAnswered?.(++answered);
        return { query, results };
      });
      // Once every query is answered: one statement for the whole batch's results.
      if (request.highlight) await this.highlight(prepared, answers, deadline);
      return answers;
    });
  }

  /**
   * Highlights on the answers' results, with the text search configuration of each result's dataset:
   * a statement for each configuration among the datasets searched (one, nearly always).
   */
  private async highlight(
    prepared: PreparedSearch | PreparedSearch[],
    answers: { query: string; results: SearchResultDto[] }[],
    deadline: AbortSignal,
  ): Promise<void> {
    if (!Array.isArray(prepared)) return this.highlights.add(prepared.dataset.language, answers, deadline);
    const languages = new Map(prepared.map(({ dataset }) => [dataset.id, dataset.language]));
    for (const language of new Set(languages.values())) {
      const ofLanguage = answers.map(({ query, results }) => ({
        query,
        results: results.filter((result) => languages.get(result.dataset_id!) === language),
      }));
      await this.highlights.add(language, ofLanguage, deadline);
    }
  }

  /**
   * `prepare` for each dataset, all at once, the queries embedded once with the process's model for
   * every dataset of that model: 404 for the first the caller may not see, as for one dataset.
   */
  private prepareAll(
    caller: Principal,
    datasetIds: string[],
    options: SearchOptions,
    queries: string[],
    { early, deadline }: { early?: Pick<EarlyVector, 'query' | 'vector'>; deadline: AbortSignal },
  ): Promise<PreparedSearch[]> {
    const vectors = keywordOnly(options) ? undefined : this.queryVectors.all(queries, early, deadline);
    return Promise.all(
      datasetIds.map((id) => this.prepare(caller, id, options, queries, { early, deadline, vectors })),
    );
  }

  /**
   * A query over several datasets: each searched as alone (its own statistics, model, weights and
   * consistency), `SEARCH_BATCH_CONCURRENCY` at a time, then merged by score, which means the same in
   * every dataset (docs/search.md, Several datasets); among equal scores, by rank, then in the order
   * the datasets were named. `max_per_document` holds across them: a document is of one dataset.
   */
  private async across(
    prepared: PreparedSearch[],
    query: string,
    options: SearchOptions,
    deadline: AbortSignal,
  ): Promise<SearchResultDto[]> {
    const shared = this.vectorHitsAcross(prepared, query, options, deadline);
    const lists = await mapConcurrently(prepared, this.config.batchConcurrency, async (one, d) =>
      (await this.search(one, query, options, deadline, shared[d])).map((result) => ({
        ...result,
        dataset_id: one.dataset.id,
      })),
    );
    return lists
      .flatMap((results, d) => results.map((result, rank) => ({ result, rank, d })))
      .sort((a, b) => b.result.score - a.result.score || a.rank - b.rank || a.d - b.d)
      .slice(0, options.limit)
      .map(({ result }) => result);
  }

  /**
   * The vector leg's hits of each of the datasets that can share one walk of their HNSW index
   * (`VectorLeg.rankAcross`): those of one model and dimension, whose query vector is the same, that
   * have no index of their own and run the leg alike. By dataset, in `prepared`'s order; a dataset
   * whose promise is absent, or comes to nothing, runs its vector leg alone.
   */
  private vectorHitsAcross(
    prepared: PreparedSearch[],
    query: string,
    options: SearchOptions,
    deadline: AbortSignal,
  ): (Promise<LegHit[] | undefined> | undefined)[] {
    const groups = new Map<string, { members: number[]; depth: number; shown: number }>();
    prepared.forEach((one, d) => {
      const { index } = one;
      const { run, depth, shown } = this.plan(one, options);
      if (!run.semantic || index.vectorIndexDimensions === index.embeddingDimensions) return;
      const key = JSON.stringify([index.embeddingModel, index.embeddingDimensions, depth, shown]);
      const group = groups.get(key) ?? { members: [], depth, shown };
      group.members.push(d);
      groups.set(key, group);
    });
    const shared: (Promise<LegHit[] | undefined> | undefined)[] = prepared.map(() => undefined);
    for (const { members, depth, shown } of groups.values()) {
      const first = prepared[members[0]];
      const vector = first.vectors.get(query);
      // Datasets not yet moved from a previous model have vectors of their own.
      const alike = members.filter((d) => prepared[d].vectors.get(query) === vector);
      if (alike.length < 2 || !vector) continue;
      const ranked = this.legs.rankVectorsAcross(
        alike.map((d) => prepared[d]),
        vector,
        { filter: first.filter, candidates: depth, shown, deadline },
      );
      for (const d of alike) {
        shared[d] = ranked.then((byDataset) => byDataset?.get(prepared[d].dataset.seq));
        shared[d].catch(() => undefined); // awaited by its dataset's search, unless another fails first
      }
    }
    return shared;
  }

  /**
   * The request's whole answer within the search timeout: query embedding, both legs, reranking and
   * reading the chunks, else 504 query_timeout (`withinSearchDeadline`).
   */
  private withinDeadline<T>(work: (deadline: AbortSignal) => Promise<T>): Promise<T> {
    return withinSearchDeadline(this.config.timeoutMs, work);
  }

  /**
   * The query's embedding, started before its request has been checked (see EarlyQueryEmbedding), or
   * null when it must wait: the query is not one the service takes, or the embedder is busy or has a
   * price per call.
   */
  embedEarly(query: string): Promise<number[]> | null {
    if (!this.embedding.current()?.idleForQueries?.() || this.queryIssue(query, 'query')) return null;
    const vector = this.queryVectors.one(query);
    vector.catch(() => undefined); // the request may yet be refused, and nobody waits for it
    return vector;
  }

  /**
   * The dataset, visible to the caller (public datasets to anyone), with the options checked (the
   * queries were, by `checkQuery`). `early` is a query's embedding already under way; the others
   * are given up while they wait for the model once `deadline` aborts.
   * The queries' embeddings start while the dataset is looked up: the lookup is then off the critical
   * path of a search. A caller who turns out not to see the dataset has spent one embedding per
   * request, within its rate limit (docs/decisions.md).
   */
  async prepare(
    caller: Principal,
    datasetId: string,
    options: SearchOptions,
    queries: string[],
    {
      early,
      deadline,
      vectors: shared,
    }: {
      early?: Pick<EarlyVector, 'query' | 'vector'>;
      deadline?: AbortSignal;
      /** The queries' vectors under way with the process's model, shared by the datasets of a search. */
      vectors?: Map<string, Promise<number[]>>;
    } = {},
  ): Promise<PreparedSearch> {
    const filter = parseFilters(options.filters); // 400 for a malformed filter before any work is done
    if (options.rerank && !this.reranking.current()) throw SearchErrors.rerankUnavailable();
    // Started with the process's model, which is nearly always the dataset's.
    const noVectors = keywordOnly(options);
    let vectors = noVectors
      ? new Map<string, Promise<number[]>>()
      : (shared ?? this.queryVectors.all(queries, early, deadline));
    // Read beside the dataset's lookup, which decides whether the caller sees it at all.
    const state = this.indexState.of(this.reads.statements(deadline), datasetId);
    state.catch(() => undefined); // awaited below, unless the caller does not see the dataset
    const dataset = await this.datasets.get(caller, datasetId);
    const index = await state;
    const provider = this.embedding.forModel({
      name: index.embeddingModel,
      dimensions: index.embeddingDimensions,
    });
    if (!noVectors && provider && provider !== this.embedding.current()) {
      // A dataset not yet moved from `EMBEDDING_PREVIOUS_MODEL`: its queries are embedded with it.
      vectors = this.queryVectors.all(queries, undefined, deadline, provider);
    }
    if (options.mode === 'semantic') {
      const reason = this.semanticUnavailable(index);
      // A dataset with nothing indexed yet (its documents may still be processing) has nothing to
      // find in this mode, as in the others: no results, not an error. Neither leg then runs.
      const empty = index.chunkCount === 0 && this.embedding.current() !== null;
      if (reason && !empty) throw SearchErrors.semanticUnavailable(reason);
    }
    // Counted once for all the request's queries, while their vectors are computed: the count
    // chooses how the vector leg applies the filters, and the keyword leg when it has it.
    const passing =
      filter.fields > 0 && options.mode !== 'keyword' && !this.semanticUnavailable(index)
        ? this.chunkReads.passingDocuments(
            this.reads.statements(deadline),
            dataset,
            documentCondition(filter),
          )
        : undefined;
    passing?.catch(() => undefined); // awaited by the legs, unless the search fails first
    return { dataset, index, vectors, filter, passing };
  }

  /** 400 for a query the service does not take (the DTO checks that it is a string). */
  checkQuery(query: string, field: string): void {
    const issue = this.queryIssue(query, field);
    if (issue) throw issue;
  }

  private queryIssue(query: string, field: string): AppError | null {
    const characters = codePointCount(query);
    if (characters > SEARCH_LIMITS.queryCharacters) return SearchErrors.queryTooLong(field, characters);
    const issue = stringIssue(query) ?? (isVisibleText(query) ? null : 'must contain visible text');
    return issue ? CommonErrors.validation([{ field, issue }]) : null;
  }

  /**
   * One query of a prepared search (`prepare` checked it and started its embedding). Its statements
   * are cancelled when `deadline` aborts. Each leg ranks in a snapshot of its own, and rows are read
   * in others: a document replaced meanwhile (`DocumentsService.replace`) could show chunks of both its
   * versions, or of neither. Such an answer is thrown away and the search run again, up to
   * `VERSION_ATTEMPTS` times (docs/search.md, Consistency).
   */
  private async search(
    prepared: PreparedSearch,
    query: string,
    options: SearchOptions,
    deadline?: AbortSignal,
    semanticHits?: Promise<LegHit[] | undefined>,
  ): Promise<SearchResultDto[]> {
    for (let attempt = 1; ; attempt++) {
      const last = attempt === VERSION_ATTEMPTS;
      // Hits ranked with other datasets' are of the first attempt's moment: a later one ranks anew.
      const shared = attempt === 1 ? semanticHits : undefined;
      const results = await this.searchOnce(prepared, query, options, {
        deadline,
        last,
        semanticHits: shared,
      });
      if (results) return results;
    }
  }

  /**
   * A search's answer, or null when what it read was not one state of the dataset's documents: its
   * legs read different counts of chunks removed (`LegHit.removed`), or a chunk they ranked was gone
   * when its row was read. The `last` attempt answers all the same, without the chunks gone.
   */
  private async searchOnce(
    prepared: PreparedSearch,
    query: string,
    options: SearchOptions,
    {
      deadline,
      last,
      semanticHits,
    }: { deadline?: AbortSignal; last: boolean; semanticHits?: Promise<LegHit[] | undefined> },
  ): Promise<SearchResultDto[] | null> {
    // A batch's later query, taken up after the deadline: nothing of it starts.
    deadline?.throwIfAborted();
    const { dataset, index } = prepared;
    const { reranker, run, depth, shown, fusion, perDocument } = this.plan(prepared, options);
    const { semantic, keyword } = await this.legs.rank({ dataset, index }, query, run, {
      filter: prepared.filter,
      passing: prepared.passing,
      candidates: depth,
      shown,
      deadline,
      vector: prepared.vectors.get(query),
      semanticHits,
    });
    const versions = new Set([...(semantic ?? []), ...(keyword ?? [])].map((hit) => hit.removed));
    versions.delete(undefined);
    if (versions.size > 1 && !last) return null;
    let ranked = fuse({ semantic, keyword }, fusion?.weights);
    let vanished = false;
    const read = async (seqs: string[]) => {
      const rows = await this.chunkReads.chunks(this.reads.statements(deadline), dataset.seq, seqs);
      if (rows.size < seqs.length) vanished = true;
      return rows;
    };

    if (reranker) {
      const pool = await withRows(ranked, shown, read);
      if (vanished && !last) return null;
      const probabilities = await reranker
        .score(
          query,
          pool.map((entry) => entry.row.content),
          deadline,
        )
        .catch((error: unknown) =>
          Promise.reject(givenUp(deadline) ?? SearchErrors.rerankFailed(String(error))),
        );
      ranked = pool
        .map((entry, i) => ({
          ...entry,
          rerank: probabilities[i],
          score: probabilities[i],
          basis: 'rerank' as const,
        }))
        .sort((x, y) => y.score - x.score);
    }

    // Scores never rise down the list (see `fuse`), so the results kept are a prefix of it.
    const minScore = options.min_score ?? 0;
    const kept = minScore > 0 ? ranked.filter((entry) => round(entry.score) >= minScore) : ranked;
    const top = await withRows(
      kept,
      options.limit,
      read,
      perDocument !== undefined ? atMostPerDocument(perDocument) : undefined,
    );
    if (vanished && !last) return null;
    return top.map((entry) => toResult(entry, { explain: options.explain, fusion }));
  }

  /** What a search of the dataset runs: its legs, how deep they rank, and how their hits are fused. */
  private plan(prepared: PreparedSearch, options: SearchOptions) {
    const { index } = prepared;
    const useSemantic = options.mode !== 'keyword' && !this.semanticUnavailable(index);
    const useKeyword = options.mode !== 'semantic';
    const reranker = options.rerank ? this.reranking.current() : null;
    // A leg alone is the ranking: its first `limit` are the answer, unless a reranker reorders more,
    // or results are bounded per document, which takes as many candidates as a hybrid search.
    const perDocument = options.max_per_document;
    const grouped = perDocument !== undefined && perDocument < options.limit;
    const candidates =
      (useSemantic && useKeyword) || grouped ? hybridCandidates(options.limit) : options.limit;
    const depth = reranker ? Math.max(candidates, this.rerank.candidates) : candidates;
    // The hits that can be shown, or that a reranker reads, come with their rows from the legs (a
    // fused hit beyond a leg's first `shown` is read after the fusion, by `withRows`).
    const shown = reranker ? Math.max(options.limit, this.rerank.candidates) : options.limit;
    const fusion = useSemantic && useKeyword ? this.weightsOf(options, index) : undefined;
    // A leg of weight 0 takes no part in the order, nor in the score: it need not run.
    const run = {
      semantic: useSemantic && fusion?.weights.semantic !== 0,
      keyword: useKeyword && fusion?.weights.keyword !== 0,
    };
    return { reranker, run, depth, shown, fusion, perDocument: grouped ? perDocument : undefined };
  }

  /** The weights of a hybrid search: the request's, else the dataset's own, else equal ones. */
  private weightsOf(
    options: SearchOptions,
    index: IndexState,
  ): { weights: FusionWeights; source: WeightsSource } {
    if (options.weights) return { weights: requestedWeights(options.weights), source: 'request' };
    if (index.fusion) return { weights: index.fusion, source: 'dataset' };
    return { weights: EQUAL_WEIGHTS, source: 'default' };
  }

  /** Why the vector leg cannot run for the dataset whose index is in `index`, or null when it can. */
  semanticUnavailable(index: IndexState): string | null {
    const provider = this.embedding.current();
    if (!provider) return 'the service runs keyword-only (no embedding provider)';
    if (index.embeddingModel === null) return 'the dataset has no embeddings yet';
    if (!this.embedding.forModel({ name: index.embeddingModel, dimensions: index.embeddingDimensions })) {
      return `the dataset was embedded with ${index.embeddingModel}, the service now uses ${provider.model} (re-embed it, with ${index.embeddingModel} as EMBEDDING_PREVIOUS_MODEL meanwhile)`;
    }
    return null;
  }
}

/** No vector leg runs in keyword mode, nor in a hybrid search that gives it no weight. */
function keywordOnly(options: SearchOptions): boolean {
  return (
    options.mode === 'keyword' ||
    (options.mode === 'hybrid' &&
      options.weights !== undefined &&
      requestedWeights(options.weights).semantic === 0)
  );
}

/**
 * The datasets of a search of `dataset_ids`, or the one of `dataset_id`; 400 for both, or neither
 * (the DTO leaves both optional).
 */
function datasetsOf(request: { dataset_id?: string; dataset_ids?: string[] }): string[] | string {
  if (request.dataset_ids === undefined) {
    if (request.dataset_id === undefined)
      throw CommonErrors.validation([
        { field: 'dataset_id', issue: 'is required, unless dataset_ids is given' },
      ]);
    return request.dataset_id;
  }
  if (request.dataset_id !== undefined)
    throw CommonErrors.validation([{ field: 'dataset_ids', issue: 'must not be given with dataset_id' }]);
  return request.dataset_ids;
}

/** Accepts the rows of each document until it has had `most` of them (`withRows`). */
function atMostPerDocument(most: number): (row: ChunkRow) => boolean {
  const counts = new Map<string, number>();
  return (row) => {
    const count = counts.get(row.documentId) ?? 0;
    if (count >= most) return false;
    counts.set(row.documentId, count + 1);
    return true;
  };
}

/**
 * The request's weights as two shares that sum to 1: one weight left out is 1 minus the other, and
 * two are taken in proportion, so that 0 and 0, like any two equal weights, are equal shares.
 */
export function requestedWeights(requested: { keyword?: number; semantic?: number }): FusionWeights {
  const keyword = requested.keyword ?? 1 - (requested.semantic ?? 0.5);
  const semantic = requested.semantic ?? 1 - keyword;
  const sum = keyword + semantic;
  return sum > 0 ? { keyword: keyword / sum, semantic: semantic / sum } : EQUAL_WEIGHTS;
}
