import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, ApiResponse } from '@nestjs/swagger';

/** The contract's error body, for the OpenAPI document. */
export class ErrorResponseDto {
  @ApiProperty({
    description: 'Human-readable message',
    example: 'Dataset ds_4Jq0Zt6mYwQ1bR8sVx3nLp not found',
  })
  error!: string;

  @ApiProperty({ description: 'Stable machine-readable code', example: 'dataset_not_found' })
  code!: string;

  @ApiPropertyOptional({
    description:
      'Structured context: the field and issue of a validation error, the id that was not found, ...',
    type: 'object',
    additionalProperties: true,
    example: { dataset_id: 'ds_4Jq0Zt6mYwQ1bR8sVx3nLp' },
  })
  details?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'Seconds to wait before retrying; on 429 only', example: 1800 })
  retry_after?: number;
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid request parameters (codes: validation_error, invalid_json, and the field-specific codes listed)',
  401: 'Missing or invalid credentials (codes: authentication_required, invalid_api_key, invalid_access_token)',
  403: 'The credential lacks the permission this route needs (codes: insufficient_scope, forbidden)',
  404: 'The resource does not exist or is not visible to the caller',
  409: 'Conflict with the current state',
  413: 'The request body is too large (code: payload_too_large)',
  415: 'Unsupported Content-Type (code: unsupported_media_type)',
  422: 'The request is well-formed but cannot be carried out',
  429: 'Rate limit exceeded (code: rate_limit_exceeded, with retry_after)',
};

/** Documents the error responses of a route; `codes` adds route-specific codes to the description. */
export function ApiErrors(statuses: number[], codes: Partial<Record<number, string[]>> = {}) {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({
        status,
        type: ErrorResponseDto,
        description: [
          DESCRIPTIONS[status] ?? 'Error',
          ...(codes[status] ? [`codes: ${codes[status].join(', ')}`] : []),
        ].join('; '),
      }),
    ),
  );
}
