import { ApiExtension, ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { API_ERROR_CODES, type ErrorCode } from 'src/common/errors/error-codes.js';

/** What `details` holds most often; other codes add keys of their own (docs/decisions.md, Errors). */
export class FieldIssueDto {
  @ApiProperty({ example: 'limit' })
  field!: string;

  @ApiProperty({ example: 'must not be greater than 50' })
  issue!: string;
}

export class ErrorDetailsDto {
  @ApiPropertyOptional({ description: 'The field at fault (validation errors)', example: 'limit' })
  field?: string;

  @ApiPropertyOptional({ description: 'What is wrong with it', example: 'must not be greater than 50' })
  issue?: string;

  @ApiPropertyOptional({
    description: 'Every field at fault, the first one first (validation errors)',
    type: [FieldIssueDto],
  })
  errors?: FieldIssueDto[];

  @ApiPropertyOptional({ description: 'The media types or codings the route takes (415)', type: [String] })
  allowed?: string[];

  @ApiPropertyOptional({ description: 'The permission the credential lacks (403 insufficient_scope)' })
  required_scope?: string;
}

/** The contract's error body, for the OpenAPI document. */
export class ErrorResponseDto {
  @ApiProperty({
    description: 'Human-readable message',
    example: 'Dataset "ds_4Jq0Zt6mYwQ1bR8sVx3nLp" not found',
  })
  error!: string;

  @ApiProperty({
    description: 'Stable machine-readable code (docs/decisions.md, Errors, says when each is answered)',
    enum: API_ERROR_CODES,
    enumName: 'ErrorCode',
    example: 'dataset_not_found',
  })
  code!: ErrorCode;

  @ApiPropertyOptional({
    description:
      'Structured context: the field and issue of a validation error, the id that was not found, ...; ' +
      'keys other than those listed depend on the code',
    type: () => ErrorDetailsDto,
  })
  details?: ErrorDetailsDto & Record<string, unknown>;

  @ApiPropertyOptional({
    description: 'Seconds to wait before retrying; on 429 only',
    type: 'integer',
    example: 1800,
  })
  retry_after?: number;
}

/** What each status means, whatever the route. */
export const STATUS_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request parameters',
  401: 'Missing or invalid credentials',
  403: 'The credential lacks the permission this route needs',
  404: 'The resource does not exist or is not visible to the caller',
  409: 'Conflict with the current state',
  413: 'The request body is too large',
  415: 'Unsupported Content-Type, charset or Content-Encoding',
  422: 'The request is well-formed but cannot be carried out',
  429: 'Rate limit exceeded: wait `retry_after` seconds (also in Retry-After)',
  500: 'Something unexpected failed; the cause is logged, never sent',
  502: 'A third-party provider failed',
  503: 'The service cannot answer now',
  504: 'The request ran past its deadline',
};

/**
 * The codes any authenticated route can answer with at a status, whatever it does: a body that does
 * not parse, a bad credential, a spent rate limit, a process draining.
 */
export const GENERIC_CODES: Partial<Record<number, ErrorCode[]>> = {
  400: ['validation_error', 'invalid_json', 'invalid_content_encoding', 'request_aborted'],
  401: [
    'authentication_required',
    'invalid_api_key',
    'invalid_token',
    'invalid_authorization_header',
    'invalid_session',
  ],
  403: ['insufficient_scope', 'csrf_rejected'],
  413: ['payload_too_large'],
  415: ['unsupported_media_type'],
  429: ['rate_limit_exceeded'],
  500: ['internal_error'],
  503: ['shutting_down', 'database_unavailable'],
};

export type ErrorCodesByStatus = Partial<Record<number, ErrorCode[]>>;

/** The operation extension `ApiErrors` records its statuses and codes in, until the document is built. */
export const ERRORS_EXTENSION = 'x-error-codes';

/**
 * Declares the error statuses of a route and the codes it answers at each beyond `GENERIC_CODES`; the
 * OpenAPI document gives each status its own response and an example of each code (src/openapi/).
 */
export function ApiErrors(statuses: number[], codes: ErrorCodesByStatus = {}) {
  return ApiExtension(
    ERRORS_EXTENSION,
    Object.fromEntries(statuses.map((status) => [status, codes[status] ?? []])),
  );
}
