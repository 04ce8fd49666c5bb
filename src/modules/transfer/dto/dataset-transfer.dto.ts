import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, ValidateIf } from 'class-validator';
import { DatasetResponseDto, toDatasetResponse } from 'src/modules/datasets/dto/dataset.dto.js';
import type { ImportResult, VectorOutcome } from 'src/modules/transfer/dataset-import.service.js';

export class ImportDatasetQueryDto {
  @ApiPropertyOptional({
    description: "The new dataset's name, in place of the archive's (names are unique in an account)",
    example: 'Manuals (copy)',
  })
  @ValidateIf((_, value) => value !== undefined)
  @IsString({ message: 'must be a string' })
  name?: string;
}

export class ImportSummaryDto {
  @ApiProperty({
    description: 'The dataset the archive was exported from',
    example: 'ds_4Jq0Zt6mYwQ1bR8sVx3nLp',
  })
  source_dataset_id!: string;

  @ApiProperty({ type: 'integer', example: 41 })
  documents!: number;

  @ApiProperty({ type: 'integer', example: 530 })
  chunks!: number;

  @ApiProperty({
    type: 'integer',
    example: 0,
    description: 'Chunks written without a vector (none in the archive, or of another model)',
  })
  chunks_without_vector!: number;

  @ApiProperty({
    enum: ['restored', 'embedding', 'keyword_only'],
    description:
      "`restored`: the archive's vectors, of this service's model, are searched as they were; `embedding`: " +
      "they were of another model (or absent), and a re-embedding to this service's model is under way " +
      '(`GET /v1/datasets/{id}/reembedding`); `keyword_only`: no vectors, and no model here to make them',
  })
  vectors!: VectorOutcome;
}

export class DatasetImportResponseDto extends DatasetResponseDto {
  @ApiProperty({ type: ImportSummaryDto })
  import!: ImportSummaryDto;
}

export function toImportResponse(result: ImportResult): DatasetImportResponseDto {
  return {
    ...toDatasetResponse(result.dataset),
    import: {
      source_dataset_id: result.sourceDatasetId,
      documents: result.documents,
      chunks: result.chunks,
      chunks_without_vector: result.chunksWithoutVector,
      vectors: result.vectors,
    },
  };
}
