import { ApiProperty, OmitType, PickType } from '@nestjs/swagger';
import { PageEnvelopeDto } from 'src/common/pagination/pagination.js';
import { documentTitle } from 'src/modules/chunk-index/document-context.js';
import type { DocumentEntity, DocumentStatus } from 'src/modules/documents/document.entity.js';
import {
  DOCUMENT_STATUSES,
  DocumentResponseDto,
  toDocumentListItem,
  toDocumentSummary,
} from 'src/modules/documents/dto/document.dto.js';
import {
  BatchItemDto,
  BatchQueryResponseDto,
  QueryResponseDto,
  SearchResultDto,
} from 'src/modules/search/dto/search.dto.js';

/** The tools' answers: the REST API's response DTOs, with what an agent needs to cite and read on. */

const TITLE_DOC = { description: "The document's metadata title, else its filename, else its id" };
const URL_DOC = {
  description: "The document's metadata url when it is a web address, else its address in this API",
};
const METADATA_DOC = {
  type: 'object',
  additionalProperties: true,
  description: "The document's metadata",
} as const;

/** A search result: the REST result, its source to cite, and `id`, which `fetch` takes. */
export class CitedResultDto extends PickType(SearchResultDto, [
  'chunk_id',
  'document_id',
  'filename',
  'page',
  'chunk_index',
  'char_start',
  'char_end',
  'score',
  'content',
  'highlights',
] as const) {
  @ApiProperty({ description: 'The chunk id; fetch it to read the passage with the text around it' })
  id!: string;

  @ApiProperty()
  dataset_id!: string;

  @ApiProperty(TITLE_DOC)
  title!: string;

  @ApiProperty(URL_DOC)
  url!: string;

  @ApiProperty(METADATA_DOC)
  metadata!: Record<string, unknown>;
}

export class SearchToolResultDto extends OmitType(QueryResponseDto, ['results'] as const) {
  @ApiProperty({ type: [CitedResultDto] })
  results!: CitedResultDto[];
}

export class BatchSearchToolItemDto extends OmitType(BatchItemDto, ['results'] as const) {
  @ApiProperty({ type: [CitedResultDto] })
  results!: CitedResultDto[];
}

export class BatchSearchToolResultDto extends OmitType(BatchQueryResponseDto, ['results'] as const) {
  @ApiProperty({ type: [BatchSearchToolItemDto], description: 'One answer per query, in their order' })
  results!: BatchSearchToolItemDto[];
}

/** A document as the tools list it: as REST lists it, with a title to cite it by. */
export class ToolDocumentDto extends OmitType(DocumentResponseDto, [
  'processing_time_ms',
  'processed_at',
] as const) {
  @ApiProperty(TITLE_DOC)
  title!: string;
}

export class ToolDocumentListDto extends PageEnvelopeDto {
  @ApiProperty({ type: [ToolDocumentDto] })
  documents!: ToolDocumentDto[];
}

/** `fetch`, in the shape ChatGPT's connectors read (`id`, `title`, `text`, `url`, `metadata`). */
export class FetchResultDto {
  @ApiProperty({ description: 'The id fetched: a document id, or a search result id' })
  id!: string;

  @ApiProperty(TITLE_DOC)
  title!: string;

  @ApiProperty({ description: "A page of the document's text, or the passage with those around it" })
  text!: string;

  @ApiProperty(URL_DOC)
  url!: string;

  @ApiProperty(METADATA_DOC)
  metadata!: Record<string, unknown>;

  @ApiProperty()
  document_id!: string;

  @ApiProperty()
  dataset_id!: string;

  @ApiProperty({
    type: String,
    nullable: true,
    description: "The document's file name; null for text sent as such",
  })
  filename!: string | null;

  @ApiProperty({ enum: DOCUMENT_STATUSES })
  status!: DocumentStatus;

  @ApiProperty({ type: 'integer', nullable: true, description: "The passage's page or slide (results only)" })
  page!: number | null;

  @ApiProperty({ type: 'integer', description: "Where the text starts in the document's text" })
  offset!: number;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'Where the next page starts; null at the end',
  })
  next_offset!: number | null;

  @ApiProperty({ type: 'integer' })
  total_characters!: number;
}

/** A document's title: its metadata's `title`, else its filename, else its id. */
export function titleOf(
  metadata: Record<string, unknown>,
  filename: string | null,
  documentId: string,
): string {
  return documentTitle(metadata, filename) ?? documentId;
}

/** Where a document is: its metadata's `url` when it is a web address, else its address in this API. */
export function urlOf(
  base: string,
  metadata: Record<string, unknown>,
  datasetId: string,
  documentId: string,
): string {
  const url = metadata.url;
  if (typeof url === 'string' && /^https?:\/\/\S+$/i.test(url)) return url;
  return `${base}/v1/datasets/${datasetId}/documents/${documentId}`;
}

/**
 * A search result with what an agent needs to cite it: its document, title and link, and its place
 * there, all read by the search itself. `base` is where the service is reached; `searched` is the
 * dataset of a search of one, whose results do not name it (those of several do).
 */
export function toCitedResult(
  result: SearchResultDto,
  searched: string | undefined,
  base: string,
): CitedResultDto {
  const datasetId = result.dataset_id ?? searched;
  if (datasetId === undefined) throw new Error(`result ${result.chunk_id} names no dataset`);
  const metadata = result.metadata ?? {};
  return {
    id: result.chunk_id,
    chunk_id: result.chunk_id,
    document_id: result.document_id,
    dataset_id: datasetId,
    title: titleOf(metadata, result.filename, result.document_id),
    filename: result.filename,
    url: urlOf(base, metadata, datasetId, result.document_id),
    page: result.page,
    chunk_index: result.chunk_index,
    char_start: result.char_start,
    char_end: result.char_end,
    score: result.score,
    content: result.content,
    ...(result.highlights && { highlights: result.highlights }),
    metadata,
  };
}

/** A document as lists show it: as REST lists it (its progress, or why it failed), with its title. */
export function toToolDocument(document: DocumentEntity): ToolDocumentDto {
  return {
    ...toDocumentListItem(document),
    title: titleOf(document.metadata, document.filename, document.id),
  };
}

/** A document just added: as the REST upload answers, with its title. */
export function toAddedDocument(document: DocumentEntity): ToolDocumentDto {
  return {
    ...toDocumentSummary(document),
    title: titleOf(document.metadata, document.filename, document.id),
  };
}

/** What `fetch` says of the document it reads from, besides the text. */
export function fetchedDocument(
  document: DocumentEntity,
  base: string,
): Pick<FetchResultDto, 'title' | 'url' | 'metadata' | 'document_id' | 'dataset_id' | 'filename' | 'status'> {
  return {
    title: titleOf(document.metadata, document.filename, document.id),
    url: urlOf(base, document.metadata, document.datasetId, document.id),
    metadata: document.metadata,
    document_id: document.id,
    dataset_id: document.datasetId,
    filename: document.filename,
    status: document.status,
  };
}
