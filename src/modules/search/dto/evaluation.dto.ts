import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  Allow,
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsDefined,
  IsInt,
  IsObject,
  IsString,
  Max,
  Min,
  MinLength,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import type { ErrorCode } from 'src/common/errors/error-codes.js';
import { AsSent } from 'src/common/validation/validation.pipe.js';
import {
  FILTERS_DOC,
  FusionWeightsDto,
  SEARCH_MODES,
  type SearchMode,
} from 'src/modules/search/dto/search.dto.js';
import { SEARCH_LIMITS } from 'src/modules/search/search.errors.js';

/** What one evaluation request may hold (docs/search.md, Evaluating retrieval on your own data). */
export const EVALUATION_LIMITS = {
  /** Judged queries per request: larger sets are sent in pages (`per_query`). */
  queries: 100,
  /** Items of one query's `relevant`, and documents they may name in all. */
  relevantPerQuery: 1_000,
  /** Hybrid weights a request adds to those judged anyway. */
  weights: 10,
  grade: { default: 1, max: 100 },
} as const;

/** Where a hybrid row's weights come from: those a search would use, the request's, or the fixed grid. */
export const EVALUATION_WEIGHTS_SOURCES = ['dataset', 'default', 'request', 'grid'] as const;
export type EvaluationWeightsSource = (typeof EVALUATION_WEIGHTS_SOURCES)[number];

const GRADE_ISSUE = `must be an integer from 1 to ${EVALUATION_LIMITS.grade.max}`;

/** A document judged relevant to a query: named by its id, or by the metadata it holds. */
export class JudgedDocumentDto {
  @ApiPropertyOptional({
    description:
      'A document of the dataset, by the `document_id` createDocument returned; or give `metadata`',
    example: 'doc_7Yh2kQ9mWz4Lp0sVt3nB8x',
  })
  @IsString({ message: 'must be a string' })
  @ValidateIf((_, value) => value !== undefined)
  document_id?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description:
      'Instead of `document_id`: every document of the dataset whose metadata holds each of these fields with ' +
      'this value, as the filter `{"field": value}` matches (an array field containing it; a dotted name reaching ' +
      `into nested metadata); at most ${SEARCH_LIMITS.filterFields} fields, values strings, numbers or booleans`,
    example: { source_id: '4983' },
  })
  @AsSent()
  @IsObject({ message: 'must be an object of metadata fields and values, such as {"source_id": "4983"}' })
  @ValidateIf((_, value) => value !== undefined)
  metadata?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: EVALUATION_LIMITS.grade.max,
    default: EVALUATION_LIMITS.grade.default,
    description:
      'How relevant the document is: its gain in nDCG. A document several items name takes the highest; leave out documents judged not relevant',
  })
  @Max(EVALUATION_LIMITS.grade.max, { message: GRADE_ISSUE })
  @Min(1, { message: GRADE_ISSUE })
  @IsInt({ message: GRADE_ISSUE })
  grade: number = EVALUATION_LIMITS.grade.default;
}

/** A query with the documents a user would want it to find. */
export class JudgedQueryDto {
  @ApiProperty({
    minLength: 1,
    maxLength: SEARCH_LIMITS.queryCharacters,
    description: 'The query, as a user would search: the same rules as a search query',
    example: 'how do I install on linux?',
  })
  @MinLength(1, { message: 'must not be empty' })
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  query!: string;

  @ApiProperty({
    type: [JudgedDocumentDto],
    minItems: 1,
    maxItems: EVALUATION_LIMITS.relevantPerQuery,
    description: 'The documents relevant to the query, each by `document_id` or by `metadata`',
  })
  @ValidateNested({ each: true })
  @Type(() => JudgedDocumentDto)
  @IsObject({ each: true, message: 'must be objects such as {"document_id": "doc_...", "grade": 1}' })
  @ArrayMaxSize(EVALUATION_LIMITS.relevantPerQuery, {
    message: `must name at most ${EVALUATION_LIMITS.relevantPerQuery} documents`,
  })
  @ArrayMinSize(1, { message: 'must name at least one relevant document' })
  @IsArray({ message: 'must be an array of judged documents' })
  @IsDefined({ message: 'is required' })
  relevant!: JudgedDocumentDto[];
}

export class EvaluationRequestDto {
  @ApiProperty({
    type: [JudgedQueryDto],
    minItems: 1,
    maxItems: EVALUATION_LIMITS.queries,
    description:
      `The judged queries, at most ${EVALUATION_LIMITS.queries}: a larger set goes in pages, with \`per_query\`, ` +
      'whose figures average over all pages exactly',
  })
  @ValidateNested({ each: true })
  @Type(() => JudgedQueryDto)
  @IsObject({ each: true, message: 'must be objects such as {"query": "...", "relevant": [...]}' })
  @IsArray({ message: 'must be an array of judged queries' })
  @IsDefined({ message: 'is required' })
  queries!: JudgedQueryDto[];

  @ApiPropertyOptional({
    type: [FusionWeightsDto],
    maxItems: EVALUATION_LIMITS.weights,
    description:
      "Hybrid weights to judge besides the dataset's own and a fixed grid (semantic 0, 0.3, 0.5, 0.7, 1), as " +
      "search's `weights` takes them",
    example: [{ keyword: 0.8, semantic: 0.2 }],
  })
  @ValidateNested({ each: true })
  @Type(() => FusionWeightsDto)
  @IsObject({ each: true, message: 'must be objects such as {"keyword": 0.7, "semantic": 0.3}' })
  @ArrayMaxSize(EVALUATION_LIMITS.weights, {
    message: `must hold at most ${EVALUATION_LIMITS.weights} weights`,
  })
  @IsArray({ message: 'must be an array of weights such as [{"keyword": 0.7, "semantic": 0.3}]' })
  @ValidateIf((_, value) => value !== undefined)
  weights?: FusionWeightsDto[];

  @ApiPropertyOptional({
    ...FILTERS_DOC,
    description: `Every query searches under these. ${FILTERS_DOC.description}`,
  })
  @AsSent()
  // Checked by the filter compiler, as search's filters are.
  @Allow({ context: { code: 'invalid_filter' satisfies ErrorCode } })
  filters?: Record<string, unknown>;

  @ApiPropertyOptional({
    default: false,
    description: "Also give each query's figures (unrounded), in the order of `queries`",
  })
  @ValidateIf((_, value) => value !== undefined)
  @IsBoolean({ message: 'must be a boolean' })
  per_query: boolean = false;
}

/** The three figures of a mode: each query's, or their means over the request's queries. */
export class EvaluationFiguresDto {
  @ApiProperty({
    minimum: 0,
    maximum: 1,
    description: 'nDCG@10: the graded gains of the first 10 documents, against their best order',
    example: 0.7084,
  })
  ndcg_at_10!: number;

  @ApiProperty({
    minimum: 0,
    maximum: 1,
    description: 'Recall@100: the share of the relevant documents among the first 100',
    example: 0.928,
  })
  recall_at_100!: number;

  @ApiProperty({
    minimum: 0,
    maximum: 1,
    description: 'MRR@10: 1 / the rank of the first relevant document among the first 10, else 0',
    example: 0.677,
  })
  mrr_at_10!: number;
}

/** One way of searching, and how well it ranked the judged documents. */
export class EvaluatedModeDto extends EvaluationFiguresDto {
  @ApiProperty({ enum: SEARCH_MODES, description: 'The search mode', example: 'hybrid' })
  mode!: SearchMode;

  @ApiPropertyOptional({
    type: FusionWeightsDto,
    description: 'hybrid: the weights, as two shares that sum to 1',
  })
  weights?: FusionWeightsDto;

  @ApiPropertyOptional({
    enum: EVALUATION_WEIGHTS_SOURCES,
    description:
      "hybrid: where the weights come from: the dataset's own (what its searches use), equal weights for a dataset " +
      "the service has not judged yet (`default`, what its searches use), the request's `weights`, or the fixed grid",
    example: 'dataset',
  })
  weights_source?: EvaluationWeightsSource;
}

export class QueryEvaluationDto {
  @ApiProperty({ example: 'how do I install on linux?' })
  query!: string;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    description: 'The distinct documents judged relevant to it',
    example: 2,
  })
  relevant_documents!: number;

  @ApiProperty({
    type: [EvaluatedModeDto],
    description: "The query's figures, unrounded, in the order of `modes`",
  })
  modes!: EvaluatedModeDto[];
}

export class EvaluationResponseDto {
  @ApiProperty({ example: 'ds_4Jq0Zt6mYwQ1bR8sVx3nLp' })
  dataset_id!: string;

  @ApiProperty({ type: 'integer', description: 'The judged queries measured', example: 100 })
  queries!: number;

  @ApiProperty({
    type: [EvaluatedModeDto],
    description:
      "Each mode's means over the queries, to 4 decimals: keyword, semantic, then hybrid at the weights the " +
      "dataset's searches use, at the request's weights, and at the grid's",
  })
  modes!: EvaluatedModeDto[];

  @ApiPropertyOptional({
    description: "Why only the keyword leg was measured: the dataset has no vectors of the service's model",
    example: 'the dataset has no embeddings yet',
  })
  semantic_unavailable?: string;

  @ApiPropertyOptional({ type: [QueryEvaluationDto], description: "`per_query`: each query's figures" })
  per_query?: QueryEvaluationDto[];

  @ApiProperty({ type: 'integer', description: 'Time the evaluation took in the server', example: 850 })
  evaluation_time_ms!: number;
}
