import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsDefined, IsIn, IsString, ValidateIf } from 'class-validator';
import { PageEnvelopeDto, PageQueryDto } from 'src/common/pagination/pagination.js';
import { CodePointLength, IsVisibleLabel } from 'src/common/validation/json-value.js';
import { IsMetadata } from 'src/common/validation/metadata.js';
import { AsSent } from 'src/common/validation/validation.pipe.js';
import type { ErrorCode } from 'src/common/errors/error-codes.js';
import type { FusionChoice } from 'src/modules/chunk-index/fusion-choice.repository.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';

/**
 * Names are stored trimmed and in Unicode's composed form (NFC), so that `é` typed as one character
 * and as `e` with a combining accent (as macOS file names have it) are one name, which the unique index
 * on `lower(name)` then compares.
 */
const normalizeName = ({ value }: { value: unknown }) =>
  typeof value === 'string' ? value.normalize('NFC').trim() : value;
const NAME_RULE = { context: { code: 'invalid_name' satisfies ErrorCode } };
const NAME_LENGTH = { ...NAME_RULE, message: 'must be 1-200 characters after trimming' };

const METADATA_DOC = {
  type: 'object',
  additionalProperties: true,
  description: 'Custom key-value pairs: a JSON object of at most 64 keys, 16 KB and 5 levels of nesting',
  example: { team: 'search', tags: ['onboarding', 'faq'] },
} as const;

/** PostgreSQL's built-in text search configurations: stemming and stop words per language. */
export const TEXT_SEARCH_LANGUAGES = [
  'simple',
  'arabic',
  'armenian',
  'basque',
  'catalan',
  'danish',
  'dutch',
  'english',
  'finnish',
  'french',
  'german',
  'greek',
  'hindi',
  'hungarian',
  'indonesian',
  'irish',
  'italian',
  'lithuanian',
  'nepali',
  'norwegian',
  'portuguese',
  'romanian',
  'russian',
  'serbian',
  'spanish',
  'swedish',
  'tamil',
  'turkish',
  'yiddish',
] as const;

export class CreateDatasetDto {
  @ApiProperty({
    minLength: 1,
    maxLength: 200,
    example: 'Product manuals',
    description:
      'Unique in the account, case-insensitively; trimmed and stored in NFC; no control characters, and something visible',
  })
  // class-validator runs the rule nearest the property first, and reports only the first that fails.
  @Transform(normalizeName)
  @IsVisibleLabel(NAME_RULE)
  @CodePointLength(1, 200, NAME_LENGTH)
  @IsString({ ...NAME_RULE, message: 'must be a string' })
  @IsDefined({ ...NAME_RULE, message: 'is required' })
  name!: string;

  @ApiPropertyOptional({ maxLength: 1000, example: 'Manuals for every product we ship' })
  @ValidateIf((_, value) => value !== undefined)
  @CodePointLength(0, 1000, { message: 'must be at most 1000 characters' })
  @IsString({ message: 'must be a string' })
  description?: string;

  @ApiPropertyOptional({
    default: false,
    description: 'true makes the dataset readable without authentication',
  })
  @ValidateIf((_, value) => value !== undefined)
  @IsBoolean({ message: 'must be a boolean' })
  is_public?: boolean;

  @ApiPropertyOptional(METADATA_DOC)
  @AsSent()
  @ValidateIf((_, value) => value !== undefined)
  @IsMetadata()
  metadata?: Record<string, unknown>;

  @ApiPropertyOptional({
    enum: TEXT_SEARCH_LANGUAGES,
    default: 'english',
    description:
      'Extension: the language of keyword search (stemming, stop words); `simple` does neither. Set at creation.',
  })
  @ValidateIf((_, value) => value !== undefined)
  @IsIn(TEXT_SEARCH_LANGUAGES, { message: `must be one of ${TEXT_SEARCH_LANGUAGES.join(', ')}` })
  language?: (typeof TEXT_SEARCH_LANGUAGES)[number];
}

export class UpdateDatasetDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 200, example: 'Product manuals (2026)' })
  @ValidateIf((_, value) => value !== undefined)
  @Transform(normalizeName)
  @IsVisibleLabel(NAME_RULE)
  @CodePointLength(1, 200, NAME_LENGTH)
  @IsString({ ...NAME_RULE, message: 'must be a string' })
  name?: string;

  // `type` given: `string | null` reflects as Object, which documented an object the server refuses.
  @ApiPropertyOptional({
    type: String,
    maxLength: 1000,
    nullable: true,
    description: 'null clears the description',
  })
  @ValidateIf((_, value) => value !== undefined && value !== null)
  @CodePointLength(0, 1000, { message: 'must be at most 1000 characters' })
  @IsString({ message: 'must be a string or null' })
  description?: string | null;

  @ApiPropertyOptional()
  @ValidateIf((_, value) => value !== undefined)
  @IsBoolean({ message: 'must be a boolean' })
  is_public?: boolean;

  @ApiPropertyOptional({
    ...METADATA_DOC,
    description:
      'Merged into the existing metadata, top-level key by key: a key set to null is removed, any other value replaces the key whole (null is refused below the top level)',
    example: { team: 'docs', obsolete_key: null },
  })
  @AsSent()
  @ValidateIf((_, value) => value !== undefined)
  @IsMetadata({ allowNullValues: true })
  metadata?: Record<string, unknown>;
}

export const DATASET_SORTS = ['name', '-name', 'created_at', '-created_at'] as const;
export type DatasetSort = (typeof DATASET_SORTS)[number];

export class ListDatasetsQueryDto extends PageQueryDto {
  @ApiPropertyOptional({
    enum: DATASET_SORTS,
    default: '-created_at',
    description: 'A leading "-" sorts descending',
  })
  @IsIn(DATASET_SORTS, { message: `must be one of ${DATASET_SORTS.join(', ')}` })
  sort: DatasetSort = '-created_at';
}

export class FusionWeightsShownDto {
  @ApiProperty({ minimum: 0, maximum: 1, example: 0.7 })
  keyword!: number;

  @ApiProperty({ minimum: 0, maximum: 1, example: 0.3 })
  semantic!: number;
}

export class FusionEvidenceDto {
  @ApiProperty({ description: 'The model whose vectors were judged', example: 'minishlab/potion-base-2M' })
  embedding_model!: string;

  @ApiProperty({ type: 'integer', description: "The dataset's chunks when judged", example: 5665 })
  chunk_count!: number;

  @ApiProperty({ description: 'nDCG@10 of the keyword leg alone on the pseudo-queries', example: 0.81 })
  keyword_ndcg_at_10!: number;

  @ApiProperty({ description: 'nDCG@10 of the semantic leg alone', example: 0.42 })
  semantic_ndcg_at_10!: number;

  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'number' },
    description: 'nDCG@10 of hybrid search at each semantic weight tried (keyword weight 1 − it)',
    example: { '0.0': 0.81, '0.1': 0.83, '0.2': 0.83, '0.5': 0.78, '1.0': 0.42 },
  })
  hybrid_ndcg_at_10!: Record<string, number>;
}

export class DatasetFusionDto {
  @ApiProperty({
    type: FusionWeightsShownDto,
    description: 'What hybrid searches weigh each leg by, unless a request says',
  })
  weights!: FusionWeightsShownDto;

  @ApiProperty({
    enum: ['dataset', 'default'],
    description:
      "`dataset`: chosen by the service from the dataset's own documents; `default`: equal weights, until the " +
      'dataset holds enough chunks to judge (docs/search.md, Weights chosen per dataset)',
    example: 'dataset',
  })
  source!: 'dataset' | 'default';

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-11-22T08:30:00.000Z' })
  chosen_at!: string | null;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'Known-item queries drawn from the dataset that the choice was judged on',
    example: 200,
  })
  pseudo_queries!: number | null;

  @ApiProperty({ type: FusionEvidenceDto, nullable: true, description: 'What each leg and weight scored' })
  evidence!: FusionEvidenceDto | null;
}

export class DatasetResponseDto {
  @ApiProperty({ example: 'ds_4Jq0Zt6mYwQ1bR8sVx3nLp' })
  id!: string;

  @ApiProperty({ example: 'Product manuals' })
  name!: string;

  @ApiProperty({ nullable: true, type: String, example: 'Manuals for every product we ship' })
  description!: string | null;

  @ApiProperty({ example: false })
  is_public!: boolean;

  @ApiProperty({ type: 'integer', example: 0 })
  document_count!: number;

  @ApiProperty({ example: 'english', description: 'Language of keyword search' })
  language!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-22T08:30:00.000Z' })
  created_at!: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-22T08:30:00.000Z' })
  updated_at!: string;

  @ApiPropertyOptional({
    type: DatasetFusionDto,
    description:
      "Extension, on getDataset and updateDataset: the weights of the dataset's hybrid searches, and on what " +
      'evidence they were chosen',
    // A dataset not judged yet: the evidence's fields have examples of their own.
    example: {
      weights: { keyword: 0.5, semantic: 0.5 },
      source: 'default',
      chosen_at: null,
      pseudo_queries: null,
      evidence: null,
    },
  })
  fusion?: DatasetFusionDto;

  @ApiProperty(METADATA_DOC)
  metadata!: Record<string, unknown>;
}

/** A dataset as the API shows it, over REST and MCP alike. */
export function toDatasetResponse(dataset: DatasetEntity, fusion?: FusionChoice | null): DatasetResponseDto {
  return {
    id: dataset.id,
    name: dataset.name,
    description: dataset.description,
    is_public: dataset.isPublic,
    document_count: dataset.documentCount,
    language: dataset.language,
    created_at: dataset.createdAt.toISOString(),
    updated_at: dataset.updatedAt.toISOString(),
    metadata: dataset.metadata,
    ...(fusion !== undefined && { fusion: toFusionResponse(fusion) }),
  };
}

function toFusionResponse(choice: FusionChoice | null): DatasetFusionDto {
  if (!choice) {
    return {
      weights: { keyword: 0.5, semantic: 0.5 },
      source: 'default',
      chosen_at: null,
      pseudo_queries: null,
      evidence: null,
    };
  }
  return {
    weights: { keyword: choice.keywordWeight, semantic: choice.semanticWeight },
    source: 'dataset',
    chosen_at: choice.chosenAt.toISOString(),
    pseudo_queries: choice.pseudoQueries,
    evidence: {
      embedding_model: choice.embeddingModel,
      chunk_count: choice.chunkCount,
      keyword_ndcg_at_10: choice.evidence.keyword,
      semantic_ndcg_at_10: choice.evidence.semantic,
      hybrid_ndcg_at_10: choice.evidence.hybrid,
    },
  };
}

export class DatasetListResponseDto extends PageEnvelopeDto {
  @ApiProperty({ type: [DatasetResponseDto] })
  datasets!: DatasetResponseDto[];
}
