import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags, type ExampleObject } from '@nestjs/swagger';
import type { Request } from 'express';
import { ApiErrors, type ErrorCodesByStatus } from 'src/common/http/api-errors.decorator.js';
import { CurrentPrincipal, PublicReadable } from 'src/modules/auth/auth.decorators.js';
import type { Principal } from 'src/modules/auth/auth.types.js';
import { StartsEarly } from 'src/modules/auth/guards/early-start.guard.js';
import {
  BatchQueryDto,
  BatchQueryResponseDto,
  DATASET_ID_PLACEHOLDER,
  QueryDto,
  QueryResponseDto,
  type SearchResultDto,
} from 'src/modules/search/dto/search.dto.js';
import { EarlyQueryEmbedding } from 'src/modules/search/early-query-embedding.js';
import { SearchService } from 'src/modules/search/search.service.js';

/**
 * The request bodies Swagger UI offers, the first by default: they find the example document of
 * `createDocument` once the dataset id is put in. Without them it would build one from every field's
 * example, `min_score` and filters included.
 */
function queryExamples(queries: { query: string } | { queries: string[] }): Record<string, ExampleObject> {
  const replace = `Replace ${DATASET_ID_PLACEHOLDER} with the \`id\` createDataset returned.`;
  return {
    plain: {
      summary: 'A search',
      description: replace,
      value: { ...queries, dataset_id: DATASET_ID_PLACEHOLDER },
    },
    filtered: {
      summary: 'Filtered on metadata, with scores explained and matches highlighted',
      description: replace,
      value: {
        ...queries,
        dataset_id: DATASET_ID_PLACEHOLDER,
        limit: 10,
        filters: { category: 'guide', tags: { $in: ['setup', 'linux'] } },
        explain: true,
        highlight: true,
      },
    },
  };
}

const SEARCH_ERRORS = {
  400: [
    'validation_error',
    'query_too_long',
    'invalid_filter',
    'too_many_filters',
    'rerank_unavailable',
    'semantic_unavailable',
  ],
  404: ['dataset_not_found'],
  502: ['rerank_failed'],
  503: ['embedding_unavailable'],
  504: ['query_timeout'],
} satisfies ErrorCodesByStatus;

@ApiTags('search')
@Controller('v1/mcp')
export class SearchController {
  constructor(private readonly search: SearchService) {}

  @Post('query')
  @HttpCode(200)
  @PublicReadable({ scope: 'search' })
  @StartsEarly(EarlyQueryEmbedding)
  @ApiOperation({
    operationId: 'searchDataset',
    summary: 'Hybrid search in one dataset',
    description:
      "Vector similarity and BM25, ordered by the legs' scores (each over its best) weighted by `weights`, else by " +
      "the dataset's own weights (`fusion` on the dataset). `score` says how well a result answers " +
      'the query, the same scale for every query: 0.9-1.0 excellent, 0.7-0.9 good, 0.5-0.7 moderate, below 0.5 weak; ' +
      '`min_score` leaves out weaker results. Each result names its source for citing: the document, its title and ' +
      'file name, and the place of the chunk (index, character offsets, page). Public datasets can be searched ' +
      'without credentials.',
  })
  @ApiBody({ type: QueryDto, examples: queryExamples({ query: 'how do I install on linux?' }) })
  @ApiOkResponse({ type: QueryResponseDto })
  @ApiErrors([400, 401, 403, 404, 413, 415, 429, 502, 503, 504], SEARCH_ERRORS)
  async query(
    @CurrentPrincipal() caller: Principal,
    @Body() body: QueryDto,
    @Req() request: Request,
  ): Promise<QueryResponseDto> {
    const early = request.earlyQueryVector;
    const started = early?.startedAt ?? performance.now();
    const results = await this.search.query(caller, body, early);
    return { results, query_time_ms: Math.round(performance.now() - started) };
  }

  @Post('batch-query')
  @HttpCode(200)
  @PublicReadable({ scope: 'search' })
  @ApiOperation({
    operationId: 'batchSearchDataset',
    summary: 'Several queries in one dataset, in parallel',
    description:
      'Up to 10 queries; results in query order. Filters, mode and rerank apply to every query. Each result ' +
      "carries its source (document, title, place) as a single query's does, but not the document's metadata.",
  })
  @ApiBody({
    type: BatchQueryDto,
    examples: queryExamples({ queries: ['install on linux', 'reset a password'] }),
  })
  @ApiOkResponse({ type: BatchQueryResponseDto })
  @ApiErrors([400, 401, 403, 404, 413, 415, 429, 502, 503, 504], {
    ...SEARCH_ERRORS,
    400: [...SEARCH_ERRORS[400], 'too_many_queries'],
  })
  async batch(
    @CurrentPrincipal() caller: Principal,
    @Body() body: BatchQueryDto,
  ): Promise<BatchQueryResponseDto> {
    const started = performance.now();
    const answers = await this.search.batch(caller, body);
    const results = answers.map(({ query, results }) => ({ query, results: results.map(withoutMetadata) }));
    return { results, query_time_ms: Math.round(performance.now() - started) };
  }
}

/**
 * Batch results carry no metadata (the contract), but do carry their source, document and place,
 * so that each can be cited without another request (docs/decisions.md, Search results).
 */
function withoutMetadata(result: SearchResultDto): SearchResultDto {
  const shown = { ...result };
  delete shown.metadata;
  return shown;
}
