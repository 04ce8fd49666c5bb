import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { constants, createGzip } from 'node:zlib';
import { Controller, Get, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { ApiErrors } from 'src/common/http/api-errors.decorator.js';
import { Created } from 'src/common/http/created.decorator.js';
import { Accepts } from 'src/common/http/request-body.interceptor.js';
import { streamedBodyOf } from 'src/common/http/streamed-body.js';
import { Idempotent } from 'src/common/idempotency/idempotent.decorator.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { Auth, CurrentAccount, CurrentPrincipal } from 'src/modules/auth/auth.decorators.js';
import type { AccountPrincipal, Principal } from 'src/modules/auth/auth.types.js';
import { attachmentDisposition } from 'src/modules/documents/download-headers.js';
import { ARCHIVE_MEDIA_TYPE } from 'src/modules/transfer/archive-format.js';
import { DatasetExportService } from 'src/modules/transfer/dataset-export.service.js';
import { DatasetImportService, IMPORT_MAX_BYTES } from 'src/modules/transfer/dataset-import.service.js';
import {
  DatasetImportResponseDto,
  ImportDatasetQueryDto,
  toImportResponse,
} from 'src/modules/transfer/dto/dataset-transfer.dto.js';

/** Thrown into an export whose client has gone: the snapshot is let go at once. */
class ExportAborted extends Error {}

@ApiTags('datasets')
@Controller('v1/datasets')
export class DatasetTransferController {
  constructor(
    private readonly exports: DatasetExportService,
    private readonly imports: DatasetImportService,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @Get(':dataset_id/export')
  @Auth({ scope: 'documents:read' })
  @ApiOperation({
    operationId: 'exportDataset',
    summary: 'Export a dataset as one archive',
    description:
      'The dataset whole (settings, documents with their metadata and original files, chunks with offsets, ' +
      'pages, context and vectors, the embedding model and dimension, the chosen fusion weights) as a gzip of ' +
      'NDJSON records in the format of docs/export-format.md (version 1), read from one snapshot. Streamed as it ' +
      'is read: the headers and the manifest come at once whatever the size. Any dataset the caller can read ' +
      '(its own, or a public one) with an account credential; `POST /v1/datasets/import` takes the file.',
  })
  @ApiProduces(ARCHIVE_MEDIA_TYPE)
  @ApiOkResponse({ description: 'The archive', schema: { type: 'string', format: 'binary' } })
  @ApiErrors([401, 403, 404, 429], { 404: ['dataset_not_found'] })
  async export(
    @CurrentPrincipal() caller: Principal,
    @Param('dataset_id') datasetId: string,
    @Res() response: Response,
  ): Promise<void> {
    const dataset = await this.exports.readable(caller, datasetId);
    response.status(200);
    response.setHeader('Content-Type', ARCHIVE_MEDIA_TYPE);
    response.setHeader('Content-Disposition', attachmentDisposition(`${dataset.id}.dss.ndjson.gz`));
    response.setHeader('Cache-Control', 'no-store');
    // Fastest level: vectors do not compress, text does at any level, and the export should keep up.
    const gzip = createGzip({ level: constants.Z_BEST_SPEED });
    const sent = pipeline(gzip, response);
    try {
      await this.exports.write(dataset, {
        async write(bytes) {
          if (gzip.destroyed) throw new ExportAborted();
          if (gzip.write(bytes)) return;
          // Whichever comes first; the other listener goes with the signal.
          const done = new AbortController();
          try {
            await Promise.race([
              once(gzip, 'drain', { signal: done.signal }),
              once(gzip, 'close', { signal: done.signal }),
            ]);
          } finally {
            done.abort();
          }
          if (gzip.destroyed) throw new ExportAborted();
        },
        flush: () => gzip.flush(),
      });
      gzip.end();
      await sent;
    } catch (error) {
      // The headers are gone: the client learns of the failure from a cut stream (the importer refuses it).
      if (!(error instanceof ExportAborted)) {
        this.logger.error({ err: error, dataset_id: dataset.id }, 'export failed mid-stream');
      }
      gzip.destroy();
      response.destroy();
      await sent.catch(() => undefined);
    }
  }

  @Post('import')
  @Created(DatasetImportResponseDto, '/v1/datasets/{id}')
  @Auth({ scope: 'datasets:write' })
  @Accepts(ARCHIVE_MEDIA_TYPE, 'application/octet-stream')
  @Idempotent({ streamedBodyBytes: IMPORT_MAX_BYTES })
  @ApiOperation({
    operationId: 'importDataset',
    summary: 'Import a dataset archive into a new dataset',
    description:
      'The body is an archive of `GET /v1/datasets/{id}/export` (docs/export-format.md), read as it arrives and ' +
      'written in one transaction: the answer comes once the dataset is whole, and a refused archive leaves ' +
      "nothing. The dataset, its documents and chunks get new ids. Vectors of this service's model and dimension " +
      'are kept (nothing is embedded again); others are dropped and the chunks embedded again in the background ' +
      '(`import.vectors`: `embedding`). Postings and BM25 statistics are made as indexing makes them. `name` ' +
      "replaces the archive's name. Each document is checked as an upload of it would be.",
    requestBody: {
      required: true,
      content: { [ARCHIVE_MEDIA_TYPE]: { schema: { type: 'string', format: 'binary' } } },
    },
  })
  @ApiErrors([400, 401, 403, 409, 413, 415, 422, 429], {
    400: [
      'archive_version_unsupported',
      'archive_corrupt',
      'archive_truncated',
      'archive_size_mismatch',
      'archive_unsafe_path',
      'archive_invalid_vector',
      'archive_duplicate_id',
      'archive_unknown_document',
      'request_aborted',
      'validation_error',
      'invalid_idempotency_key',
    ],
    403: ['grant_restricted'],
    409: ['dataset_name_conflict', 'idempotency_key_in_progress'],
    413: ['payload_too_large'],
    415: ['unsupported_media_type'],
    422: ['archive_over_limits', 'dataset_limit_reached', 'idempotency_key_reused'],
  })
  async import(
    @CurrentAccount() caller: AccountPrincipal,
    @Query() query: ImportDatasetQueryDto,
    @Req() request: Request,
  ): Promise<DatasetImportResponseDto> {
    // The archive is gzip itself: a content coding on top is not decoded, as for uploads.
    const coding = request.headers['content-encoding']?.trim().toLowerCase();
    if (coding && coding !== 'identity') throw CommonErrors.unsupportedContentEncoding(coding, []);
    if (Number(request.headers['content-length'] ?? 0) > IMPORT_MAX_BYTES) {
      throw CommonErrors.payloadTooLarge(IMPORT_MAX_BYTES);
    }
    const result = await this.imports.import(caller, streamedBodyOf(request, IMPORT_MAX_BYTES), query.name);
    return toImportResponse(result);
  }
}
