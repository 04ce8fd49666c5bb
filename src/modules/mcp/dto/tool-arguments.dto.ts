import { ApiProperty, ApiPropertyOptional, IntersectionType, OmitType } from '@nestjs/swagger';
import { IsDefined, IsInt, IsString, Max, Min, MinLength } from 'class-validator';
import { ListDatasetsQueryDto } from 'src/modules/datasets/dto/dataset.dto.js';
import { ListDocumentsQueryDto, UploadTextDocumentDto } from 'src/modules/documents/dto/document.dto.js';
import { EvaluationRequestDto } from 'src/modules/search/dto/evaluation.dto.js';
import { BatchQueryDto, QueryDto } from 'src/modules/search/dto/search.dto.js';

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

/** `search`: the REST search's options but `explain`, which ranks the legs for a person tuning search. */
export class SearchToolDto extends IntersectionType(
  ToolDatasetDto,
  OmitType(QueryDto, ['dataset_id', 'dataset_ids', 'explain'] as const),
) {}

export class BatchSearchToolDto extends IntersectionType(
  ToolDatasetDto,
  OmitType(BatchQueryDto, ['dataset_id', 'dataset_ids', 'explain'] as const),
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
