import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsIn, IsString, ValidateIf } from 'class-validator';
import { PageEnvelopeDto, PageQueryDto } from 'src/common/pagination/pagination.js';
import { IsMetadata } from 'src/common/validation/metadata.js';
import { AsSent } from 'src/common/validation/validation.pipe.js';
import { DOCUMENT_LIMITS } from 'src/modules/documents/documents.errors.js';
import type {
  DocumentEntity,
  DocumentStatus,
  ProcessingStage,
} from 'src/modules/documents/document.entity.js';

export const METADATA_DOC = {
  type: 'object',
  additionalProperties: true,
  description:
    'Custom metadata (at most 64 keys, 16 KB, 5 levels); conventional keys are title, category and tags (an array). ' +
    'All of it is searchable and usable in filters.',
  example: { title: 'Installation guide', category: 'guide', tags: ['setup', 'linux'] },
} as const;

/** `application/json` upload. */
export class UploadTextDocumentDto {
  @ApiProperty({
    minLength: 1,
    maxLength: DOCUMENT_LIMITS.contentCharacters,
    description: 'The text to index, with something visible in it',
    example: 'To install, run the installer.',
  })
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  content!: string;

  @ApiPropertyOptional(METADATA_DOC)
  @AsSent()
  @ValidateIf((_, value) => value !== undefined)
  @IsMetadata()
  metadata?: Record<string, unknown>;
}

/** `PATCH .../documents/{document_id}`: the fields changed in place, without reprocessing. */
export class UpdateDocumentDto {
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description:
      "Merged into the document's metadata as a dataset's PATCH merges its own, top-level key by key: a key set to " +
      'null is removed, any other value replaces the key whole (null is refused below the top level). The result ' +
      'keeps the limits of an upload (64 keys, 16 KB, 5 levels).',
    example: { category: 'manual', reviewed: true, obsolete_key: null },
  })
  @AsSent()
  @ValidateIf((_, value) => value !== undefined)
  @IsMetadata({ allowNullValues: true })
  metadata?: Record<string, unknown>;
}

/** The text fields of a `multipart/form-data` upload (the file itself is the `file` part). */
export class UploadFileFieldsDto {
  @ApiPropertyOptional({ description: 'A JSON-encoded metadata object', example: '{"category": "guide"}' })
  @ValidateIf((_, value) => value !== undefined)
  @IsString({ message: 'must be a string holding a JSON object' })
  metadata?: string;
}

/** For the OpenAPI document only: the multipart form. */
export class UploadFileFormDto {
  @ApiProperty({
    type: 'string',
    format: 'binary',
    description:
      'The file, at most 10 MB: .txt .md .csv, .pdf .docx .pptx, .jpg .jpeg .png (OCR), code (.py .js .ts .java .go .rb .c ' +
      '.h .cpp .cs .php .rs .kt .swift .sh .sql and similar), .json .xml .yaml .yml. The type is checked against the content.',
  })
  file!: unknown;

  @ApiPropertyOptional({ description: 'A JSON-encoded metadata object', example: '{"category": "guide"}' })
  metadata?: string;
}

export const DOCUMENT_STATUSES: DocumentStatus[] = ['processing', 'ready', 'failed'];

export class ListDocumentsQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: DOCUMENT_STATUSES, description: 'Only documents in this state' })
  @ValidateIf((_, value) => value !== undefined)
  @IsIn(DOCUMENT_STATUSES, { message: `must be one of ${DOCUMENT_STATUSES.join(', ')}` })
  status?: DocumentStatus;
}

export class ProgressDto {
  @ApiProperty({ enum: ['upload', 'extraction', 'chunking', 'embedding', 'indexing'], example: 'embedding' })
  stage!: ProcessingStage;

  @ApiProperty({ type: 'integer', minimum: 0, maximum: 100, example: 60 })
  percent!: number;
}

export class ProcessingErrorDto {
  @ApiProperty({ example: 'invalid_pdf' })
  code!: string;

  @ApiProperty({ example: 'The PDF is encrypted or password-protected' })
  message!: string;

  @ApiProperty({ type: 'object', additionalProperties: true, example: { reason: 'encrypted' } })
  details!: Record<string, unknown>;
}

export class DocumentResponseDto {
  @ApiProperty({ example: 'doc_7Yh2kQ9mWz4Lp0sVt3nB8x' })
  document_id!: string;

  @ApiProperty({ example: 'ds_4Jq0Zt6mYwQ1bR8sVx3nLp' })
  dataset_id!: string;

  @ApiPropertyOptional({ description: 'Original file name; present for file uploads', example: 'guide.pdf' })
  filename?: string;

  @ApiProperty({ type: 'integer', example: 48213 })
  size_bytes!: number;

  @ApiProperty({ enum: DOCUMENT_STATUSES, example: 'processing' })
  status!: DocumentStatus;

  @ApiPropertyOptional({
    type: 'integer',
    description:
      'Number of searchable chunks: when status is ready, and while a replacement processes or after it failed (the ' +
      "previous version's)",
    example: 12,
  })
  chunks_created?: number;

  @ApiProperty({ format: 'date-time' })
  created_at!: string;

  @ApiProperty(METADATA_DOC)
  metadata!: Record<string, unknown>;

  @ApiPropertyOptional({
    type: 'integer',
    description: 'Get-document only: time spent processing',
    example: 1830,
  })
  processing_time_ms?: number;

  @ApiPropertyOptional({ format: 'date-time', description: 'Get-document only: when processing finished' })
  processed_at?: string;

  @ApiPropertyOptional({
    type: 'integer',
    description:
      'Get-document only, when ready and embedded: chunks of the last run the embedding model embedded (all of them for an ' +
      'upload; after a replacement, those whose text changed)',
    example: 3,
  })
  chunks_embedded?: number;

  @ApiPropertyOptional({
    type: 'integer',
    description:
      'Get-document only, when ready and embedded: chunks of the last run that kept the vector of an unchanged chunk of the ' +
      'version it replaced',
    example: 9,
  })
  chunks_reused?: number;

  @ApiPropertyOptional({ type: ProgressDto, description: 'While processing: the current stage' })
  progress?: ProgressDto;

  @ApiPropertyOptional({ type: ProcessingErrorDto, description: 'When failed: why' })
  error?: ProcessingErrorDto;
}

/** A document's summary: the fields the contract lists for each document, as an upload answers. */
export function toDocumentSummary(document: DocumentEntity): DocumentResponseDto {
  return {
    document_id: document.id,
    dataset_id: document.datasetId,
    ...(document.filename !== null ? { filename: document.filename } : {}),
    size_bytes: document.sizeBytes,
    status: document.status,
    ...(document.chunksCreated !== null ? { chunks_created: document.chunksCreated } : {}),
    created_at: document.createdAt.toISOString(),
    metadata: document.metadata,
  };
}

/** Where a document's processing stands: its progress while processing, the error once failed. */
function processingState(document: DocumentEntity): Pick<DocumentResponseDto, 'progress' | 'error'> {
  return {
    ...(document.status === 'processing' && document.progress ? { progress: document.progress } : {}),
    ...(document.status === 'failed' && document.error ? { error: document.error } : {}),
  };
}

/**
 * A list item: the contract's fields with the processing state, so that one list shows why each
 * failed document failed, rather than one request per document.
 */
export function toDocumentListItem(document: DocumentEntity): DocumentResponseDto {
  return { ...toDocumentSummary(document), ...processingState(document) };
}

/** The full document: processing facts, progress while processing, the error once failed. */
export function toDocumentResponse(document: DocumentEntity): DocumentResponseDto {
  return {
    ...toDocumentSummary(document),
    ...(document.processingTimeMs !== null ? { processing_time_ms: document.processingTimeMs } : {}),
    ...(document.processedAt ? { processed_at: document.processedAt.toISOString() } : {}),
    ...(document.status === 'ready' && document.chunksEmbedded !== null
      ? { chunks_embedded: document.chunksEmbedded, chunks_reused: document.chunksReused ?? 0 }
      : {}),
    ...processingState(document),
  };
}

export class DocumentListResponseDto extends PageEnvelopeDto {
  @ApiProperty({ type: [DocumentResponseDto] })
  documents!: DocumentResponseDto[];
}
