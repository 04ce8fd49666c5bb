import { Controller, Get, Param, Query, StreamableFile } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { ErrorCode } from 'src/common/errors/error-codes.js';
import { ApiErrors } from 'src/common/http/api-errors.decorator.js';
import { listEnvelope, PageQueryDto } from 'src/common/pagination/pagination.js';
import { CurrentPrincipal, PublicReadable } from 'src/modules/auth/auth.decorators.js';
import type { Principal } from 'src/modules/auth/auth.types.js';
import { DocumentContentService } from 'src/modules/documents/document-content.service.js';
import {
  ChunkNeighboursQueryDto,
  ChunkWithNeighboursResponseDto,
  DocumentChunkListResponseDto,
  DocumentTextQueryDto,
  DocumentTextResponseDto,
  NEIGHBOURS,
  TEXT_PAGE,
  toChunkWithNeighbours,
  toDocumentChunk,
  toTextPageRange,
} from 'src/modules/documents/dto/document-content.dto.js';
import { attachmentDisposition, downloadName, downloadType } from 'src/modules/documents/download-headers.js';

/** What a read of a document's text or chunks may answer besides its own. */
const NOT_READY: { 404: ErrorCode[]; 409: ErrorCode[] } = {
  404: ['dataset_not_found', 'document_not_found'],
  409: ['document_processing', 'document_failed'],
};

/** A document read back: its text, its chunks, and the file it was uploaded as. */
@ApiTags('documents')
@Controller('v1/datasets/:dataset_id/documents/:document_id')
export class DocumentContentController {
  constructor(private readonly content: DocumentContentService) {}

  @Get('text')
  @PublicReadable({ scope: 'documents:read' })
  @ApiOperation({
    operationId: 'getDocumentText',
    summary: "Read a document's extracted text, a page at a time",
    description:
      `Up to \`limit\` characters (default ${TEXT_PAGE.default}, at most ${TEXT_PAGE.max}) from \`offset\`; ` +
      'pass `next_offset` as `offset` until it is null. Offsets are those of the chunks (`char_start`, ' +
      '`char_end`) and of `pages`, so a chunk or a page can be read in place. The version searched: of a ready document, ' +
      'or the previous version while a replacement processes or after it failed.',
  })
  @ApiOkResponse({ type: DocumentTextResponseDto })
  @ApiErrors([400, 401, 403, 404, 409, 429], { 400: ['validation_error'], ...NOT_READY })
  async text(
    @CurrentPrincipal() caller: Principal,
    @Param('dataset_id') datasetId: string,
    @Param('document_id') documentId: string,
    @Query() query: DocumentTextQueryDto,
  ): Promise<DocumentTextResponseDto> {
    const page = await this.content.text(caller, datasetId, documentId, query.offset, query.limit);
    return {
      document_id: page.documentId,
      text: page.text,
      offset: page.offset,
      next_offset: page.nextOffset,
      total_characters: page.totalCharacters,
      pages: page.pages?.map(toTextPageRange) ?? null,
    };
  }

  @Get('chunks')
  @PublicReadable({ scope: 'documents:read' })
  @ApiOperation({
    operationId: 'listDocumentChunks',
    summary: "List a document's chunks in order",
    description:
      'The chunks search returns, in their order in the document (`chunk_index`), with their offsets in its text. ' +
      'Paged as every list is, by `limit` and `offset` (the `chunk_index` to start from). The version searched, as for ' +
      'the text.',
  })
  @ApiOkResponse({ type: DocumentChunkListResponseDto })
  @ApiErrors([400, 401, 403, 404, 409, 429], { 400: ['validation_error'], ...NOT_READY })
  async chunks(
    @CurrentPrincipal() caller: Principal,
    @Param('dataset_id') datasetId: string,
    @Param('document_id') documentId: string,
    @Query() query: PageQueryDto,
  ): Promise<DocumentChunkListResponseDto> {
    const page = await this.content.chunks(caller, datasetId, documentId, query.offset, query.limit);
    return listEnvelope('chunks', { items: page.items.map(toDocumentChunk), total: page.total }, query);
  }

  @Get('chunks/:chunk_id')
  @PublicReadable({ scope: 'documents:read' })
  @ApiOperation({
    operationId: 'getDocumentChunk',
    summary: 'Get a chunk with the chunks around it',
    description:
      `The chunk, and up to \`neighbours\` (default ${NEIGHBOURS.default}, at most ${NEIGHBOURS.max}) ` +
      'chunks before and after it in the document, in order: the context of a search result.',
  })
  @ApiOkResponse({ type: ChunkWithNeighboursResponseDto })
  @ApiErrors([400, 401, 403, 404, 409, 429], {
    400: ['validation_error'],
    404: ['dataset_not_found', 'document_not_found', 'chunk_not_found'],
    409: NOT_READY[409],
  })
  async chunk(
    @CurrentPrincipal() caller: Principal,
    @Param('dataset_id') datasetId: string,
    @Param('document_id') documentId: string,
    @Param('chunk_id') chunkId: string,
    @Query() query: ChunkNeighboursQueryDto,
  ): Promise<ChunkWithNeighboursResponseDto> {
    const chunks = await this.content.chunk(caller, datasetId, documentId, chunkId, query.neighbours);
    return toChunkWithNeighbours(chunks, chunkId);
  }

  @Get('file')
  @PublicReadable({ scope: 'documents:read' })
  @ApiOperation({
    operationId: 'downloadDocumentFile',
    summary: 'Download the original upload',
    description:
      'The bytes as uploaded, whatever the status, with the stored media type as `Content-Type` and the ' +
      'file name in `Content-Disposition` (text sent as JSON: UTF-8, named `<document_id>.txt`).',
  })
  @ApiProduces('application/octet-stream')
  @ApiOkResponse({
    description: 'The file; `Content-Type` is its stored media type',
    schema: { type: 'string', format: 'binary' },
  })
  @ApiErrors([401, 403, 404, 429], { 404: ['dataset_not_found', 'document_not_found'] })
  async file(
    @CurrentPrincipal() caller: Principal,
    @Param('dataset_id') datasetId: string,
    @Param('document_id') documentId: string,
  ): Promise<StreamableFile> {
    const { document, content } = await this.content.file(caller, datasetId, documentId);
    return new StreamableFile(content, {
      type: downloadType(document),
      disposition: attachmentDisposition(downloadName(document)),
      length: content.length,
    });
  }
}
