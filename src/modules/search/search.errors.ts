import { AppError } from 'src/common/errors/app-error.js';

export const SEARCH_LIMITS = {
  queryCharacters: 1_000,
  results: { default: 5, max: 50 },
  filterFields: 10,
  batchQueries: 10,
  /** Datasets one search may name in `dataset_ids`. */
  datasets: 20,
} as const;

export const SearchErrors = {
  queryTooLong: (field: string, characters: number) =>
    new AppError(
      400,
      'query_too_long',
      `Queries may be at most ${SEARCH_LIMITS.queryCharacters} characters`,
      {
        field,
        issue: `has ${characters} characters; at most ${SEARCH_LIMITS.queryCharacters}`,
        limit_characters: SEARCH_LIMITS.queryCharacters,
      },
    ),
  tooManyQueries: (count: number) =>
    new AppError(400, 'too_many_queries', `A batch may hold at most ${SEARCH_LIMITS.batchQueries} queries`, {
      field: 'queries',
      count,
      limit: SEARCH_LIMITS.batchQueries,
    }),
  tooManyFilters: (count: number) =>
    new AppError(400, 'too_many_filters', `Filters may name at most ${SEARCH_LIMITS.filterFields} fields`, {
      field: 'filters',
      count,
      limit: SEARCH_LIMITS.filterFields,
    }),
  invalidFilter: (field: string, issue: string) =>
    new AppError(400, 'invalid_filter', `Invalid filter on "${field}": ${issue}`, { field, issue }),
  rerankUnavailable: () =>
    new AppError(400, 'rerank_unavailable', 'Reranking is not configured on this service (RERANK_PROVIDER)', {
      field: 'rerank',
    }),
  semanticUnavailable: (reason: string) =>
    new AppError(
      400,
      'semantic_unavailable',
      `Semantic search is not available for this dataset: ${reason}`,
      {
        field: 'mode',
        reason,
      },
    ),
  embeddingFailed: (reason: string) =>
    new AppError(
      503,
      'embedding_unavailable',
      'The query could not be embedded; retry, or search in keyword mode',
      {
        reason,
      },
    ),
  rerankFailed: (reason: string) =>
    new AppError(502, 'rerank_failed', 'The reranker did not answer; retry, or search without rerank', {
      reason,
    }),
  /** `timeoutMs`: the service's search timeout (`SEARCH_TIMEOUT_MS`). */
  timeout: (timeoutMs: number) =>
    new AppError(504, 'query_timeout', `The query did not finish within ${timeoutMs / 1000} seconds`, {
      timeout_ms: timeoutMs,
    }),
};
