import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Param,
  Patch,
  Post,
  Put,
  Query,
  Req,
  UploadedFile,
  UseInterceptors,
} from '@nestjs/common';
import {
  ApiExtraModels,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { Request } from 'express';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { Accepts } from 'src/common/http/request-body.interceptor.js';
import { ApiErrors } from 'src/common/http/api-errors.decorator.js';
import { Created } from 'src/common/http/created.decorator.js';
import { Idempotent } from 'src/common/idempotency/idempotent.decorator.js';
import { listEnvelope } from 'src/common/pagination/pagination.js';
import { isEmptyObject, metadataIssue } from 'src/common/validation/metadata.js';
import { AppValidationPipe } from 'src/common/validation/validation.pipe.js';
import { Auth, CurrentAccount, CurrentPrincipal, PublicReadable } from 'src/modules/auth/auth.decorators.js';
import type { AccountPrincipal, Principal } from 'src/modules/auth/auth.types.js';
import { DocumentErrors } from 'src/modules/documents/documents.errors.js';
import { DocumentsService, type NewUpload } from 'src/modules/documents/documents.service.js';
import {
  DocumentListResponseDto,
  DocumentResponseDto,
  ListDocumentsQueryDto,
  toDocumentListItem,
  toDocumentResponse,
  toDocumentSummary,
  UpdateDocumentDto,
  UploadFileFieldsDto,
  UploadFileFormDto,
  UploadTextDocumentDto,
} from 'src/modules/documents/dto/document.dto.js';
import { UploadInterceptor } from 'src/modules/documents/upload.interceptor.js';

const validation = new AppValidationPipe();

/** The file part of a multipart upload, as multer reads it. */
interface UploadedPart {
  originalname: string;
  /** The part's own Content-Type, which decides the kind of a file whose name says nothing. */
  mimetype: string;
  buffer: Buffer;
}

/** Multipart metadata arrives as a JSON string; it must hold a metadata object. */
function parseMetadataField(value: string | undefined): Record<string, unknown> {
  if (value === undefined || value.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw CommonErrors.invalidMetadata('must be a JSON-encoded object');
  }
  const issue = metadataIssue(parsed);
  if (issue) throw CommonErrors.invalidMetadata(issue);
  return parsed as Record<string, unknown>;
}

@ApiTags('documents')
@ApiExtraModels(UploadTextDocumentDto, UploadFileFormDto)
@Controller('v1/datasets/:dataset_id/documents')
export class DocumentsController {
  constructor(private readonly documents: DocumentsService) {}

  @Post()
  @Created(DocumentResponseDto, '/v1/datasets/{dataset_id}/documents/{document_id}')
  @Auth({ scope: 'documents:write' })
  @Accepts('application/json', 'multipart/form-data')
  @Idempotent()
  @UseInterceptors(UploadInterceptor)
  @ApiOperation({
    operationId: 'createDocument',
    summary: 'Upload a document',
    description:
      'Send text as JSON (`content`, `metadata`) or a file as multipart/form-data (`file`, `metadata` as a JSON string). ' +
      'The document is stored at once (status processing) and extracted, chunked, embedded and indexed in the background.',
    // Each form under its own media type: @ApiBody puts one schema under every @ApiConsumes type, and
    // a oneOf of both there documented a multipart `content` part and a JSON `file`, both refused.
    requestBody: {
      required: true,
      content: {
        'application/json': { schema: { $ref: getSchemaPath(UploadTextDocumentDto) } },
        'multipart/form-data': { schema: { $ref: getSchemaPath(UploadFileFormDto) } },
      },
    },
  })
  @ApiErrors([400, 401, 403, 404, 409, 413, 415, 422, 429], {
    400: ['validation_error', 'invalid_metadata', 'invalid_idempotency_key'],
    404: ['dataset_not_found'],
    409: ['idempotency_key_in_progress'],
    413: ['file_too_large', 'content_too_large', 'payload_too_large'],
    415: ['unsupported_file_type', 'unsupported_media_type'],
    422: ['document_limit_reached', 'idempotency_key_reused'],
  })
  async upload(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('dataset_id') datasetId: string,
    @Req() request: Request,
    @UploadedFile() file: UploadedPart | undefined,
    @Body() body: unknown,
  ): Promise<DocumentResponseDto> {
    const { upload } = await this.form(request, file, body);
    return toDocumentSummary(await this.documents.upload(caller, datasetId, upload));
  }

  @Post('upload')
  @Created(DocumentResponseDto, '/v1/datasets/{dataset_id}/documents/{document_id}')
  @Auth({ scope: 'documents:write' })
  @Accepts('multipart/form-data')
  @Idempotent()
  @UseInterceptors(UploadInterceptor)
  @ApiOperation({
    operationId: 'uploadDocument',
    summary: 'Upload a file as a document',
    description:
      "createDocument's multipart form, as an operation of its own: code generators give each operation one " +
      'request body, and would keep only the JSON one of createDocument. Same limits, same response.',
    requestBody: {
      required: true,
      content: { 'multipart/form-data': { schema: { $ref: getSchemaPath(UploadFileFormDto) } } },
    },
  })
  @ApiErrors([400, 401, 403, 404, 409, 413, 415, 422, 429], {
    400: ['validation_error', 'invalid_metadata', 'invalid_idempotency_key'],
    404: ['dataset_not_found'],
    409: ['idempotency_key_in_progress'],
    413: ['file_too_large', 'payload_too_large'],
    415: ['unsupported_file_type', 'unsupported_media_type'],
    422: ['document_limit_reached', 'idempotency_key_reused'],
  })
  async uploadFile(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('dataset_id') datasetId: string,
    @UploadedFile() file: UploadedPart | undefined,
    @Body() body: unknown,
  ): Promise<DocumentResponseDto> {
    const upload = await this.fileUpload(file, body);
    return toDocumentSummary(await this.documents.upload(caller, datasetId, upload));
  }

  /** The multipart form: the `file` part, and `metadata` as a JSON string. */
  private async fileUpload(file: UploadedPart | undefined, body: unknown): Promise<NewUpload> {
    return (await this.fileForm(file, body)).upload;
  }

  /** Either form, as the request's Content-Type says, and whether it sent `metadata`. */
  private form(
    request: Request,
    file: UploadedPart | undefined,
    body: unknown,
  ): Promise<{ upload: NewUpload; metadataSent: boolean }> {
    return request.is('multipart/form-data') ? this.fileForm(file, body) : this.textForm(body);
  }

  private async fileForm(
    file: UploadedPart | undefined,
    body: unknown,
  ): Promise<{ upload: NewUpload; metadataSent: boolean }> {
    const fields = (await validation.transform(body, {
      type: 'body',
      metatype: UploadFileFieldsDto,
    })) as UploadFileFieldsDto;
    if (!file) throw DocumentErrors.fileRequired();
    const upload = await this.documents.fileUpload(
      file.originalname,
      file.buffer,
      parseMetadataField(fields.metadata),
      file.mimetype,
    );
    return { upload, metadataSent: fields.metadata !== undefined && fields.metadata.trim() !== '' };
  }

  /** The JSON form: `content` and `metadata`. */
  private async textForm(body: unknown): Promise<{ upload: NewUpload; metadataSent: boolean }> {
    const text = (await validation.transform(body, {
      type: 'body',
      metatype: UploadTextDocumentDto,
    })) as UploadTextDocumentDto;
    return {
      upload: this.documents.textUpload(text.content, text.metadata),
      metadataSent: text.metadata !== undefined,
    };
  }

  @Get()
  @PublicReadable({ scope: 'documents:read' })
  @ApiOperation({
    operationId: 'listDocuments',
    summary: 'List the documents of a dataset',
    description: 'Newest first, each with its `progress` while processing and its `error` once failed.',
  })
  @ApiOkResponse({ type: DocumentListResponseDto })
  @ApiErrors([400, 401, 403, 404, 429], { 400: ['validation_error'], 404: ['dataset_not_found'] })
  async list(
    @CurrentPrincipal() caller: Principal,
    @Param('dataset_id') datasetId: string,
    @Query() query: ListDocumentsQueryDto,
  ): Promise<DocumentListResponseDto> {
    const page = await this.documents.list(caller, datasetId, query);
    return listEnvelope('documents', { items: page.items.map(toDocumentListItem), total: page.total }, query);
  }

  @Get(':document_id')
  @PublicReadable({ scope: 'documents:read' })
  @ApiOperation({ operationId: 'getDocument', summary: 'Get a document, with its processing state' })
  @ApiOkResponse({ type: DocumentResponseDto })
  @ApiErrors([401, 403, 404, 429], { 404: ['dataset_not_found', 'document_not_found'] })
  async get(
    @CurrentPrincipal() caller: Principal,
    @Param('dataset_id') datasetId: string,
    @Param('document_id') documentId: string,
  ): Promise<DocumentResponseDto> {
    return toDocumentResponse(await this.documents.get(caller, datasetId, documentId));
  }

  @Put(':document_id')
  @Auth({ scope: 'documents:write' })
  @Accepts('application/json', 'multipart/form-data')
  @Idempotent()
  @UseInterceptors(UploadInterceptor)
  @ApiOperation({
    operationId: 'replaceDocument',
    summary: "Replace a document's text or file, keeping its id",
    description:
      'The same two forms, limits and file kinds as createDocument. The document keeps its `document_id` and goes back to ' +
      'processing; `metadata`, when sent, replaces its metadata whole (left out, it stays). Until the new version is ' +
      'indexed, searches and chunk reads find the previous one, then the new one at once; if the new version fails, the ' +
      'previous one stays searchable and `error` says why. Chunks whose text is unchanged keep their vectors: ' +
      '`chunks_embedded` and `chunks_reused` say how many of each. A run under way for the document gives way to this one.',
    requestBody: {
      required: true,
      content: {
        'application/json': { schema: { $ref: getSchemaPath(UploadTextDocumentDto) } },
        'multipart/form-data': { schema: { $ref: getSchemaPath(UploadFileFormDto) } },
      },
    },
  })
  @ApiOkResponse({ type: DocumentResponseDto })
  @ApiErrors([400, 401, 403, 404, 409, 413, 415, 422, 429], {
    400: ['validation_error', 'invalid_metadata', 'invalid_idempotency_key'],
    404: ['dataset_not_found', 'document_not_found'],
    409: ['idempotency_key_in_progress'],
    413: ['file_too_large', 'content_too_large', 'payload_too_large'],
    415: ['unsupported_file_type', 'unsupported_media_type'],
    422: ['idempotency_key_reused'],
  })
  async replace(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('dataset_id') datasetId: string,
    @Param('document_id') documentId: string,
    @Req() request: Request,
    @UploadedFile() file: UploadedPart | undefined,
    @Body() body: unknown,
  ): Promise<DocumentResponseDto> {
    const { upload, metadataSent } = await this.form(request, file, body);
    return toDocumentResponse(
      await this.documents.replace(caller, datasetId, documentId, upload, { keepMetadata: !metadataSent }),
    );
  }

  @Patch(':document_id')
  @Auth({ scope: 'documents:write' })
  @ApiOperation({
    operationId: 'updateDocument',
    summary: "Change a document's metadata, without reprocessing it",
    description:
      "Metadata is merged key by key, as a dataset's PATCH merges it: a key set to null is removed. Status, chunks and " +
      'vectors stay, also while the document is processing, and search filters see the new values at once. The title ' +
      'its chunks were indexed with (metadata `title`) stays until the document is reprocessed.',
  })
  @ApiOkResponse({ type: DocumentResponseDto })
  @ApiErrors([400, 401, 403, 404, 413, 415, 429], {
    400: ['invalid_metadata', 'validation_error'],
    404: ['dataset_not_found', 'document_not_found'],
  })
  async update(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('dataset_id') datasetId: string,
    @Param('document_id') documentId: string,
    @Body() body: UpdateDocumentDto,
  ): Promise<DocumentResponseDto> {
    return toDocumentResponse(await this.documents.update(caller, datasetId, documentId, body));
  }

  @Delete(':document_id')
  @HttpCode(204)
  @Auth({ scope: 'documents:write' })
  @ApiOperation({
    operationId: 'deleteDocument',
    summary: 'Delete a document with its chunks and embeddings',
  })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiErrors([401, 403, 404, 429], { 404: ['dataset_not_found', 'document_not_found'] })
  async delete(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('dataset_id') datasetId: string,
    @Param('document_id') documentId: string,
  ): Promise<void> {
    await this.documents.delete(caller, datasetId, documentId);
  }

  @Post(':document_id/reprocess')
  @HttpCode(200)
  @Auth({ scope: 'documents:write' })
  @ApiOperation({
    operationId: 'reprocessDocument',
    summary: 'Process a document again',
    description:
      'Puts a ready or failed document back to processing and runs the whole pipeline again from its stored file.',
  })
  @ApiOkResponse({ type: DocumentResponseDto })
  @ApiErrors([400, 401, 403, 404, 409, 429], {
    400: ['validation_error'],
    404: ['dataset_not_found', 'document_not_found'],
    409: ['document_processing'],
  })
  async reprocess(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('dataset_id') datasetId: string,
    @Param('document_id') documentId: string,
    @Req() request: Request,
  ): Promise<DocumentResponseDto> {
    // The route takes no fields; one sent anyway is refused, as unknown fields are everywhere.
    const body: unknown = request.body;
    if (body !== undefined && !isEmptyObject(body)) {
      throw CommonErrors.validation([{ field: 'body', issue: 'must be empty: this route takes no fields' }]);
    }
    return toDocumentResponse(await this.documents.reprocess(caller, datasetId, documentId));
  }
}
