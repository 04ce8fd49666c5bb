import { ApiProperty, ApiPropertyOptional, IntersectionType, OmitType, PickType } from '@nestjs/swagger';
import { IsDefined, IsInt, IsString, Max, Min, MinLength } from 'class-validator';
import { ListDatasetsQueryDto } from 'src/modules/datasets/dto/dataset.dto.js';
import { ListDocumentsQueryDto, UploadTextDocumentDto } from 'src/modules/documents/dto/document.dto.js';
import { EvaluationRequestDto } from 'src/modules/search/dto/evaluation.dto.js';
import { BatchQueryDto, QueryDto } from 'src/modules/search/dto/search.dto.js';
import { SEARCH_LIMITS } from 'src/modules/search/search.errors.js';

/**
 * The tools' arguments: the REST API's DTOs for the same fields, so that a tool refuses what the
 * REST route refuses, with the same code and details, and advertises what they declare.
 */

export const FETCH_LIMITS = { defaultCharacters: 20_000, maxCharacters: 100_000 } as const;

/** `dataset_id` as an agent finds it: with list_datasets, not from a REST response. */
class ToolDatasetDto {
  @ApiProperty({ description: 'The dataset: its id (ds_...), as list_datasets gives it' })
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  dataset_id!: string;
}

/**
 * A search's datasets: one, or several in its place, validated by the REST search's own rules (and
 * refused there with the same details when both or neither are given), described for an agent. The
 * rule is in the descriptions, not a root `oneOf`: Anthropic's API refuses a tool whose input schema
 * has `oneOf`, `anyOf` or `allOf` at its root, and clients built on it drop the tool.
 */
class ToolSearchDatasetsDto extends PickType(QueryDto, ['dataset_id', 'dataset_ids'] as const) {
  @ApiPropertyOptional({
    description: 'The dataset: its id (ds_...), as list_datasets gives it. Give this or dataset_ids',
  })
  override dataset_id!: string;

  @ApiPropertyOptional({
    type: [String],
    minItems: 1,
    maxItems: SEARCH_LIMITS.datasets,
    uniqueItems: true,
    description:
      `In place of dataset_id: up to ${SEARCH_LIMITS.datasets} datasets searched as one, the results merged by ` +
      'score, each citing its own dataset',
  })
  override dataset_ids?: string[];
}

const SEARCH_DATASETS = ['dataset_id', 'dataset_ids'] as const;

/** `search`: the REST search's options but `explain`, which ranks the legs for a person tuning search. */
export class SearchToolDto extends IntersectionType(
  ToolSearchDatasetsDto,
  OmitType(QueryDto, [...SEARCH_DATASETS, 'explain'] as const),
) {}

export class BatchSearchToolDto extends IntersectionType(
  ToolSearchDatasetsDto,
  OmitType(BatchQueryDto, [...SEARCH_DATASETS, 'explain'] as const),
) {}

/** `evaluate`: the REST evaluation's body, with the dataset its URL names there. */
export class EvaluateToolDto extends IntersectionType(ToolDatasetDto, EvaluationRequestDto) {}

export class ListDatasetsToolDto extends ListDatasetsQueryDto {}

export class ListDocumentsToolDto extends IntersectionType(ToolDatasetDto, ListDocumentsQueryDto) {}

export class AddDocumentToolDto extends IntersectionType(ToolDatasetDto, UploadTextDocumentDto) {}

class ToolDocumentIdDto {
  @ApiProperty({ description: 'The document (doc_...), as add_document or list_documents gives it' })
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  document_id!: string;
}

/** `replace_document`: add_document's arguments, and the document they replace. */
export class ReplaceDocumentToolDto extends IntersectionType(AddDocumentToolDto, ToolDocumentIdDto) {}

export class FetchToolDto {
  @ApiProperty({ minLength: 1, description: 'A document id (doc_...) or a search result id (chk_...)' })
  @MinLength(1, { message: 'must not be empty' })
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  id!: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 2_147_483_647,
    default: 0,
    description: "Where to start in the document's text",
  })
  @Max(2_147_483_647, { message: 'is too large' })
  @Min(0, { message: 'must be 0 or more' })
  @IsInt({ message: 'must be an integer' })
  offset: number = 0;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: FETCH_LIMITS.maxCharacters,
    default: FETCH_LIMITS.defaultCharacters,
    description: 'The longest text to return',
  })
  @Max(FETCH_LIMITS.maxCharacters, { message: `must be from 1 to ${FETCH_LIMITS.maxCharacters}` })
  @Min(1, { message: `must be from 1 to ${FETCH_LIMITS.maxCharacters}` })
  @IsInt({ message: 'must be an integer' })
  max_characters: number = FETCH_LIMITS.defaultCharacters;
}
