import { IntersectionType, OmitType } from '@nestjs/swagger';
import { IsDefined, IsInt, IsString, Max, Min, MinLength } from 'class-validator';
import { ListDatasetsQueryDto } from 'src/modules/datasets/dto/dataset.dto.js';
import { ListDocumentsQueryDto, UploadTextDocumentDto } from 'src/modules/documents/dto/document.dto.js';
import { BatchQueryDto, QueryDto } from 'src/modules/search/dto/search.dto.js';

/**
 * The tools' arguments, validated as the REST API validates the same fields, so that a tool refuses
 * what the REST route refuses, with the same code and details.
 */

export const FETCH_LIMITS = { defaultCharacters: 20_000, maxCharacters: 100_000 } as const;

/** `search`: the REST search's options but `explain`, which ranks the legs for a person tuning search. */
export class SearchToolDto extends OmitType(QueryDto, ['explain'] as const) {}

export class BatchSearchToolDto extends OmitType(BatchQueryDto, ['explain'] as const) {}

export class ListDatasetsToolDto extends ListDatasetsQueryDto {}

class DatasetIdDto {
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  dataset_id!: string;
}

export class ListDocumentsToolDto extends IntersectionType(DatasetIdDto, ListDocumentsQueryDto) {}

export class AddDocumentToolDto extends IntersectionType(DatasetIdDto, UploadTextDocumentDto) {}

export class FetchToolDto {
  @MinLength(1, { message: 'must not be empty' })
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  id!: string;

  @Max(2_147_483_647, { message: 'is too large' })
  @Min(0, { message: 'must be 0 or more' })
  @IsInt({ message: 'must be an integer' })
  offset: number = 0;

  @Max(FETCH_LIMITS.maxCharacters, { message: `must be from 1 to ${FETCH_LIMITS.maxCharacters}` })
  @Min(1, { message: `must be from 1 to ${FETCH_LIMITS.maxCharacters}` })
  @IsInt({ message: 'must be an integer' })
  max_characters: number = FETCH_LIMITS.defaultCharacters;
}
