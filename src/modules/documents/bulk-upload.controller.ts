import { Controller, HttpCode, Param, Post, Req } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { Request } from 'express';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { ApiErrors } from 'src/common/http/api-errors.decorator.js';
import { Accepts } from 'src/common/http/request-body.interceptor.js';
import { streamedBodyOf } from 'src/common/http/streamed-body.js';
import { Idempotent } from 'src/common/idempotency/idempotent.decorator.js';
import { Auth, CurrentAccount } from 'src/modules/auth/auth.decorators.js';
import type { AccountPrincipal } from 'src/modules/auth/auth.types.js';
import { BulkUploadService } from 'src/modules/documents/bulk-upload.service.js';
import { BULK_LIMITS, DOCUMENT_LIMITS, DocumentErrors } from 'src/modules/documents/documents.errors.js';
import { BulkFileLineDto, BulkUploadResponseDto } from 'src/modules/documents/dto/bulk-upload.dto.js';
import { UploadTextDocumentDto } from 'src/modules/documents/dto/document.dto.js';

export const NDJSON = 'application/x-ndjson';

@ApiTags('documents')
@ApiExtraModels(UploadTextDocumentDto, BulkFileLineDto)
@Controller('v1/datasets/:dataset_id/documents')
export class BulkUploadController {
  constructor(private readonly bulk: BulkUploadService) {}

  @Post('bulk')
  @HttpCode(200)
  @Auth({ scope: 'documents:write' })
  @Accepts(NDJSON)
  @Idempotent({ streamedBodyBytes: BULK_LIMITS.bodyBytes })
  @ApiOperation({
    operationId: 'bulkUploadDocuments',
    summary: 'Upload many documents in one request',
    description:
      `NDJSON (\`${NDJSON}\`), one document a line: text as a JSON upload sends it (\`content\`, \`metadata\`), or a ` +
      'file (`filename`, `content_base64`, optional `media_type` and `metadata`), whose type is detected as a ' +
      `multipart upload's. At most ${BULK_LIMITS.documents} documents and ${BULK_LIMITS.bodyBytes} bytes ` +
      `(64 MiB) a request; each document within a single upload's limits (files ${DOCUMENT_LIMITS.fileBytes} ` +
      `bytes, text ${DOCUMENT_LIMITS.contentCharacters} characters), each line at most ${BULK_LIMITS.lineBytes} bytes. ` +
      'The body is read as it arrives and written in groups of up to 100 documents, each in one transaction. ' +
      'The answer gives each line its outcome in request order: the document, as an upload answers it, or the ' +
      'error a single upload of it would have answered (a line that is not a JSON object included); blank lines ' +
      'are skipped. Counted as one request against the rate limit. Past the count or size limit while the body ' +
      'streams, 413 `too_many_documents` or `payload_too_large`: documents of the lines before are kept, and ' +
      '`details` lists them as a success would (`created`, `failed`, `results`).',
    requestBody: {
      required: true,
      content: {
        [NDJSON]: {
          schema: {
            description: 'Each line one JSON object, one of these',
            oneOf: [{ $ref: getSchemaPath(UploadTextDocumentDto) }, { $ref: getSchemaPath(BulkFileLineDto) }],
          },
        },
      },
    },
  })
  @ApiOkResponse({ type: BulkUploadResponseDto })
  @ApiErrors([400, 401, 403, 404, 409, 413, 415, 422, 429], {
    400: ['validation_error', 'request_aborted', 'invalid_idempotency_key'],
    404: ['dataset_not_found'],
    409: ['idempotency_key_in_progress'],
    413: ['payload_too_large', 'too_many_documents'],
    415: ['unsupported_media_type'],
    422: ['idempotency_key_reused'],
  })
  async upload(
    @CurrentAccount() caller: AccountPrincipal,
    @Param('dataset_id') datasetId: string,
    @Req() request: Request,
  ): Promise<BulkUploadResponseDto> {
    // Read as sent, as uploads are: no content coding is decoded.
    const coding = request.headers['content-encoding']?.trim().toLowerCase();
    if (coding && coding !== 'identity') throw CommonErrors.unsupportedContentEncoding(coding, []);
    if (Number(request.headers['content-length'] ?? 0) > BULK_LIMITS.bodyBytes) {
      throw DocumentErrors.bulkTooLarge();
    }
    return this.bulk.upload(caller, datasetId, streamedBodyOf(request, BULK_LIMITS.bodyBytes));
  }
}
