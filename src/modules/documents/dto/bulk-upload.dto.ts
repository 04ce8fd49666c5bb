import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsString, ValidateIf } from 'class-validator';
import { ErrorResponseDto } from 'src/common/http/api-errors.decorator.js';
import { IsMetadata } from 'src/common/validation/metadata.js';
import { AsSent } from 'src/common/validation/validation.pipe.js';
import { DocumentResponseDto, METADATA_DOC } from 'src/modules/documents/dto/document.dto.js';

/** A line of a bulk upload that carries a file: what the multipart form's parts carry. */
export class BulkFileLineDto {
  @ApiProperty({
    description: "The file's name, which with its content decides its type, as a multipart upload's does",
    example: 'guides/install.pdf',
  })
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  filename!: string;

  @ApiProperty({
    description: "The file's bytes in base64 (RFC 4648, with padding), at most 10 MB once decoded",
    example: 'SGVsbG8sIHdvcmxkLg==',
  })
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  content_base64!: string;

  @ApiPropertyOptional({
    description:
      "The file's media type, as a multipart part's Content-Type: it decides only the text format of a name " +
      'without an extension',
    example: 'text/markdown',
  })
  @ValidateIf((_, value) => value !== undefined)
  @IsString({ message: 'must be a string' })
  media_type?: string;

  @ApiPropertyOptional(METADATA_DOC)
  @AsSent()
  @ValidateIf((_, value) => value !== undefined)
  @IsMetadata()
  metadata?: Record<string, unknown>;
}

export class BulkDocumentResultDto {
  @ApiProperty({ type: 'integer', description: "The document's line in the request, from 1", example: 1 })
  line!: number;

  @ApiProperty({
    type: 'integer',
    description: 'What a single upload of this line would have answered: 201, or the status of its error',
    example: 201,
  })
  status!: number;

  @ApiPropertyOptional({
    type: DocumentResponseDto,
    description: 'The document created, as an upload answers',
  })
  document?: DocumentResponseDto;

  @ApiPropertyOptional({ type: ErrorResponseDto, description: "Why this line's document was not created" })
  error?: ErrorResponseDto;
}

export class BulkUploadResponseDto {
  @ApiProperty({ type: 'integer', description: 'Documents created', example: 2 })
  created!: number;

  @ApiProperty({ type: 'integer', description: 'Lines refused', example: 1 })
  failed!: number;

  @ApiProperty({ type: [BulkDocumentResultDto], description: "Each line's outcome, in request order" })
  results!: BulkDocumentResultDto[];
}
