import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  Allow,
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsDefined,
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
  IsString,
  Max,
  Min,
  MinLength,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { AsSent } from 'src/common/validation/validation.pipe.js';
import type { ScoreBasis } from 'src/modules/search/fusion.js';
import { SEARCH_LIMITS } from 'src/modules/search/search.errors.js';
import type { ErrorCode } from 'src/common/errors/error-codes.js';

export const SEARCH_MODES = ['hybrid', 'semantic', 'keyword'] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];

export const FILTERS_DOC = {
  type: 'object',
  additionalProperties: true,
  nullable: true,
  description:
    `Metadata filters, at most ${SEARCH_LIMITS.filterFields} fields. ` +
    '`{"category": "guide"}` is equality (an array field such as tags matches when it ' +
    'contains the value); a dotted name such as `author.name` reaches into nested metadata. Operators per field: ' +
    '$eq $ne $gt $gte $lt $lte $in $nin $exists; combine with $and / $or. `null`, like `{}`, filters nothing.',
  example: { category: 'guide', tags: { $in: ['setup', 'linux'] } },
} as const;

/** What an example shows where only the reader knows the value: the id `createDataset` returned. */
export const DATASET_ID_PLACEHOLDER = 'REPLACE_WITH_YOUR_DATASET_ID';

export const WEIGHTS_SOURCES = ['request', 'dataset', 'default'] as const;
export type WeightsSource = (typeof WEIGHTS_SOURCES)[number];

const WEIGHT_ISSUE = 'must be a number from 0 to 1';

/** How much each leg counts in hybrid mode. */
export class FusionWeightsDto {
  @ApiPropertyOptional({
    minimum: 0,
    maximum: 1,
    example: 0.7,
    description: "The keyword leg's weight; 1 − semantic when left out",
  })
  @Max(1, { message: WEIGHT_ISSUE })
  @Min(0, { message: WEIGHT_ISSUE })
  @IsNumber({ allowNaN: false, allowInfinity: false }, { message: WEIGHT_ISSUE })
  @ValidateIf((_, value) => value !== undefined)
  keyword?: number;

  @ApiPropertyOptional({
    minimum: 0,
    maximum: 1,
    example: 0.3,
    description: "The semantic leg's weight; 1 − keyword when left out",
  })
  @Max(1, { message: WEIGHT_ISSUE })
  @Min(0, { message: WEIGHT_ISSUE })
  @IsNumber({ allowNaN: false, allowInfinity: false }, { message: WEIGHT_ISSUE })
  @ValidateIf((_, value) => value !== undefined)
  semantic?: number;
}

class SearchOptionsDto {
  @ApiPropertyOptional({
    description:
      'Required: the dataset to search, the `id` createDataset returned (`ds_...`). Extension: in its place, ' +
      '`dataset_ids` searches several',
    example: DATASET_ID_PLACEHOLDER,
  })
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required, unless dataset_ids is given' })
  @ValidateIf((dto: SearchOptionsDto) => dto.dataset_ids === undefined || dto.dataset_id !== undefined)
  dataset_id?: string;

  @ApiPropertyOptional({
    type: [String],
    minItems: 1,
    maxItems: SEARCH_LIMITS.datasets,
    uniqueItems: true,
    example: [DATASET_ID_PLACEHOLDER],
    description:
      `Extension: up to ${SEARCH_LIMITS.datasets} datasets searched as one, in place of \`dataset_id\`: each with its ` +
      'own statistics, model and weights, the results merged by `score`, each with its `dataset_id`',
  })
  @ArrayUnique({ message: 'must not name a dataset twice' })
  @IsString({ each: true, message: 'must hold dataset ids (strings)' })
  @ArrayMaxSize(SEARCH_LIMITS.datasets, { message: `must hold 1 to ${SEARCH_LIMITS.datasets} datasets` })
  @ArrayMinSize(1, { message: `must hold 1 to ${SEARCH_LIMITS.datasets} datasets` })
  @IsArray({ message: 'must be an array of dataset ids' })
  @ValidateIf((_, value) => value !== undefined)
  dataset_ids?: string[];

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: SEARCH_LIMITS.results.max,
    default: SEARCH_LIMITS.results.default,
    description: 'Results to return; in a batch, per query',
  })
  @Max(SEARCH_LIMITS.results.max, { message: `must be from 1 to ${SEARCH_LIMITS.results.max}` })
  @Min(1, { message: `must be from 1 to ${SEARCH_LIMITS.results.max}` })
  @IsInt({ message: 'must be an integer' })
  limit: number = SEARCH_LIMITS.results.default;

  @ApiPropertyOptional({
    default: false,
    description:
      'Rerank the top candidates with the configured reranker: a better order, at the cost of time',
  })
  @ValidateIf((_, value) => value !== undefined)
  @IsBoolean({ message: 'must be a boolean' })
  rerank: boolean = false;

  @ApiPropertyOptional(FILTERS_DOC)
  @AsSent()
  // Checked by the filter compiler, which reports invalid_filter / too_many_filters; the code is for
  // what the validation pipe refuses inside it (reserved keys).
  @Allow({ context: { code: 'invalid_filter' satisfies ErrorCode } })
  filters?: Record<string, unknown>;

  @ApiPropertyOptional({
    enum: SEARCH_MODES,
    default: 'hybrid',
    description:
      'Extension: `hybrid` (meaning and keywords, best for most questions), or one leg alone: `semantic` (meaning) ' +
      'or `keyword` (exact terms, codes, names)',
  })
  @IsIn(SEARCH_MODES, { message: `must be one of ${SEARCH_MODES.join(', ')}` })
  mode: SearchMode = 'hybrid';

  @ApiPropertyOptional({
    default: false,
    description:
      "Extension: add to each result what its score was formed from: each leg's own score, rank and relevance, " +
      "the fusion score, the reranker's score and `score_basis`",
  })
  @ValidateIf((_, value) => value !== undefined)
  @IsBoolean({ message: 'must be a boolean' })
  explain: boolean = false;

  @ApiPropertyOptional({
    default: false,
    example: true,
    description:
      "Extension: add to each result `highlights`, the spans of its `content` that hold the query's terms as keyword " +
      'search reads them (stemmed, without stop words; pairs of characters in Chinese and Japanese), as offsets ' +
      'into `content`',
  })
  @ValidateIf((_, value) => value !== undefined)
  @IsBoolean({ message: 'must be a boolean' })
  highlight: boolean = false;

  @ApiPropertyOptional({
    minimum: 0,
    maximum: 1,
    default: 0,
    example: 0.5,
    description:
      'Extension: leave out results scoring below this: 0.5 keeps moderate and better matches (by the score guide), ' +
      'so that no result means no good answer',
  })
  @Max(1, { message: 'must be a number from 0 to 1' })
  @Min(0, { message: 'must be a number from 0 to 1' })
  @IsNumber({ allowNaN: false, allowInfinity: false }, { message: 'must be a number from 0 to 1' })
  min_score: number = 0;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: SEARCH_LIMITS.results.max,
    example: 1,
    description:
      'Extension: at most this many results of one document, its best, so that a long document does not fill the ' +
      'results; 1 gives the best passage of each document. Left out: no bound',
  })
  @Max(SEARCH_LIMITS.results.max, { message: `must be from 1 to ${SEARCH_LIMITS.results.max}` })
  @Min(1, { message: `must be from 1 to ${SEARCH_LIMITS.results.max}` })
  @IsInt({ message: 'must be an integer' })
  @ValidateIf((_, value) => value !== undefined)
  max_per_document?: number;

  @ApiPropertyOptional({
    type: FusionWeightsDto,
    description:
      'Extension: how much each leg counts in hybrid mode, such as `{"keyword": 0.7, "semantic": 0.3}`; two ' +
      "weights are taken in proportion (one of them above 0). Left out: the dataset's own, chosen by the service " +
      "from the dataset's documents (`fusion` on the dataset)",
  })
  @ValidateNested()
  @Type(() => FusionWeightsDto)
  @IsObject({ message: 'must be an object such as {"keyword": 0.7, "semantic": 0.3}' })
  @ValidateIf((_, value) => value !== undefined)
  weights?: FusionWeightsDto;
}

export class QueryDto extends SearchOptionsDto {
  @ApiProperty({
    minLength: 1,
    maxLength: SEARCH_LIMITS.queryCharacters,
    description: 'What to look for: a question or keywords',
    example: 'how do I install on linux?',
  })
  @MinLength(1, { message: 'must not be empty' })
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  query!: string;
}

export class BatchQueryDto extends SearchOptionsDto {
  @ApiProperty({
    type: 'array',
    items: {
      type: 'string',
      minLength: 1,
      maxLength: SEARCH_LIMITS.queryCharacters,
      description: 'What to look for: a question or keywords',
    },
    minItems: 1,
    maxItems: SEARCH_LIMITS.batchQueries,
    description: 'The queries, answered in their order',
    example: ['install on linux', 'reset a password'],
  })
  @IsString({ each: true, message: 'must be strings' })
  @IsArray({ message: 'must be an array of strings' })
  @IsDefined({ message: 'is required' })
  queries!: string[];
}

/** A span of a result's `content` that matched the query. */
export class HighlightDto {
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Where the span starts in `content`, in UTF-16 code units (a JavaScript string index)',
    example: 46,
  })
  start!: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Where it ends (exclusive): the matched text is `content.slice(start, end)`',
    example: 49,
  })
  end!: number;
}

export class SearchResultDto {
  @ApiProperty({ example: 'chk_1c2R6yTq0Wn3kPz8sLb4Vd' })
  chunk_id!: string;

  @ApiPropertyOptional({
    description: 'Extension, in a search of `dataset_ids`: the dataset the result comes from',
    example: DATASET_ID_PLACEHOLDER,
  })
  dataset_id?: string;

  @ApiProperty({ example: 'To install on Linux, download the package and run the installer.' })
  content!: string;

  @ApiProperty({
    minimum: 0,
    maximum: 1,
    example: 0.93,
    description:
      'How well the chunk answers the query, the same scale for every query: 0.9-1.0 excellent, 0.7-0.9 good, ' +
      '0.5-0.7 moderate, below 0.5 weak',
  })
  score!: number;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: "The document's metadata (absent in batch results)",
    example: { title: 'Router guide', category: 'guide' },
  })
  metadata?: Record<string, unknown>;

  @ApiProperty({ description: 'The document the chunk comes from', example: 'doc_7Yh2kQ9mWz4Lp0sVt3nB8x' })
  document_id!: string;

  @ApiProperty({
    type: String,
    nullable: true,
    description: "The document's file name; null for a document sent as JSON text",
    example: 'router-guide.pdf',
  })
  filename!: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description:
      "What to cite the document as: its metadata's `title` when that is a non-empty string, else its file name, else null",
    example: 'Router guide',
  })
  title!: string | null;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: "The chunk's place in its document, 0 first",
    example: 3,
  })
  chunk_index!: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description:
      "Where the chunk starts in the document's extracted text, in UTF-16 code units (a JavaScript string index). " +
      'That text is the `content` sent (less any control characters but tab and line breaks), or the text read from ' +
      'the file, its pages or slides joined by a blank line',
    example: 1480,
  })
  char_start!: number;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Where the chunk ends in the same text (exclusive): `content` is text[char_start, char_end)',
    example: 2112,
  })
  char_end!: number;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    minimum: 1,
    description: 'The page (PDF) or slide (PPTX) the chunk is on, 1 first; null for formats without pages',
    example: 2,
  })
  page!: number | null;

  @ApiPropertyOptional({
    enum: ['keyword', 'semantic', 'rerank', 'result_below'],
    description:
      "explain: what the score is: the keyword or semantic relevance (the stronger of the two), the reranker's " +
      'probability, or the score of a stronger result ranked below this one',
    example: 'keyword',
  })
  score_basis?: ScoreBasis;

  @ApiPropertyOptional({
    minimum: 0,
    maximum: 1,
    description:
      "explain (hybrid mode): what orders the results, the legs' scores each divided by the leg's best, weighted by " +
      '`fusion_weights` and summed',
    example: 0.98,
  })
  fusion_score?: number;

  @ApiPropertyOptional({
    type: FusionWeightsDto,
    description: 'explain (hybrid mode): the weights the order used',
  })
  fusion_weights?: FusionWeightsDto;

  @ApiPropertyOptional({
    enum: WEIGHTS_SOURCES,
    description:
      "explain (hybrid mode): where the weights come from: the request's `weights`, the dataset's own (chosen by the " +
      'service from its documents), or equal weights for a dataset the service has not judged yet',
    example: 'dataset',
  })
  fusion_weights_source?: WeightsSource;

  @ApiPropertyOptional({ description: 'explain: cosine similarity', example: 0.81 })
  semantic_score?: number;

  @ApiPropertyOptional({
    description: "explain: the cosine similarity calibrated for the dataset's model",
    example: 0.86,
  })
  semantic_relevance?: number;

  @ApiPropertyOptional({
    type: 'integer',
    description: 'explain: rank in the vector leg (1 = best)',
    example: 1,
  })
  semantic_rank?: number;

  @ApiPropertyOptional({ description: 'explain: BM25 score', example: 12.4 })
  keyword_score?: number;

  @ApiPropertyOptional({
    description:
      'explain: the BM25 of a chunk holding every query term at saturation, which keyword_score is set against',
    example: 27.9,
  })
  keyword_ceiling?: number;

  @ApiPropertyOptional({ type: 'integer', description: "explain: the query's distinct terms", example: 9 })
  keyword_terms?: number;

  @ApiPropertyOptional({
    description: 'explain: keyword_score / keyword_ceiling × √keyword_terms, calibrated',
    example: 0.79,
  })
  keyword_relevance?: number;

  @ApiPropertyOptional({ type: 'integer', description: 'explain: rank in the keyword leg', example: 2 })
  keyword_rank?: number;

  @ApiPropertyOptional({ description: 'explain: reranker probability', example: 0.97 })
  rerank_score?: number;

  @ApiPropertyOptional({
    type: [HighlightDto],
    description:
      'highlight: the spans of `content` that hold a term of the query, sorted, apart from one another (touching ' +
      'ones are merged); empty when none does (a result found by meaning alone)',
    example: [
      { start: 3, end: 10 },
      { start: 46, end: 49 },
    ],
  })
  highlights?: HighlightDto[];
}

export class QueryResponseDto {
  @ApiProperty({ type: [SearchResultDto] })
  results!: SearchResultDto[];

  @ApiProperty({ type: 'integer', example: 42 })
  query_time_ms!: number;
}

export class BatchItemDto {
  @ApiProperty({ example: 'install on linux' })
  query!: string;

  @ApiProperty({ type: [SearchResultDto] })
  results!: SearchResultDto[];
}

export class BatchQueryResponseDto {
  @ApiProperty({ type: [BatchItemDto] })
  results!: BatchItemDto[];

  @ApiProperty({ type: 'integer', example: 120 })
  query_time_ms!: number;
}
