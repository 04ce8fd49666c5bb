import { applyDecorators } from '@nestjs/common';
import {
  ApiProperty,
  ApiPropertyOptional,
  ApiResponse,
  getSchemaPath,
  type HeaderObject,
  type OpenAPIObject,
  type OperationObject,
} from '@nestjs/swagger';

/** The contract's error body, for the OpenAPI document. */
export class ErrorResponseDto {
  @ApiProperty({
    description: 'Human-readable message',
    example: 'Dataset "ds_4Jq0Zt6mYwQ1bR8sVx3nLp" not found',
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

  @ApiPropertyOptional({
    description: 'Seconds to wait before retrying; on 429 only',
    type: 'integer',
    example: 1800,
  })
  retry_after?: number;
}

const DESCRIPTIONS: Record<number, string> = {
  400:
    'Invalid request parameters (codes: validation_error, invalid_json, invalid_content_encoding, request_aborted, ' +
    'and the field-specific codes listed)',
  401:
    'Missing or invalid credentials (codes: authentication_required, invalid_api_key, invalid_token, ' +
    'invalid_authorization_header, invalid_session)',
  403: 'The credential lacks the permission this route needs (codes: insufficient_scope, forbidden)',
  404: 'The resource does not exist or is not visible to the caller',
  409: 'Conflict with the current state',
  413: 'The request body is too large (code: payload_too_large)',
  415: 'Unsupported Content-Type, charset or Content-Encoding (code: unsupported_media_type)',
  422: 'The request is well-formed but cannot be carried out',
  500: 'Something unexpected failed (code: internal_error); the cause is logged, never sent',
  429: 'Rate limit exceeded (code: rate_limit_exceeded, with retry_after and Retry-After)',
  502: 'A third-party provider failed',
  503: 'The service cannot answer now (codes: shutting_down and database_unavailable, with Retry-After: 1, and the codes listed)',
  504: 'The request ran past its deadline',
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

const RATE_LIMIT_HEADERS: Record<string, HeaderObject> = {
  'X-RateLimit-Limit': {
    description: "Requests allowed in the caller's window (per hour by default)",
    schema: { type: 'integer' },
  },
  'X-RateLimit-Remaining': { description: 'Requests left in the window', schema: { type: 'integer' } },
  'X-RateLimit-Reset': {
    description: 'Unix time (seconds) at which the window ends',
    schema: { type: 'integer' },
  },
};

const RETRY_AFTER: Record<string, HeaderObject> = {
  '429': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } },
  '503': {
    description: '1, with shutting_down (retry on a new connection) and database_unavailable',
    schema: { type: 'integer' },
  },
};

const IDEMPOTENT_REPLAYED: HeaderObject = {
  description: '`true` when this is the stored response of an earlier request with the same Idempotency-Key',
  schema: { type: 'string', enum: ['true'] },
};

const REQUEST_ID: HeaderObject = {
  description:
    "The request's id, in every log line of it: the client's X-Request-Id when it is 1-128 characters of " +
    '[A-Za-z0-9._:-], else one the service made (`req_<uuid>`)',
  schema: { type: 'string' },
};

/** 503 shutting_down is refused before the rate limit is counted (docs/decisions.md, Rate limits). */
const NOT_ON_SHUTDOWN: Record<string, HeaderObject> = Object.fromEntries(
  Object.entries(RATE_LIMIT_HEADERS).map(([name, header]) => [
    name,
    { ...header, description: `${header.description}; absent with shutting_down` },
  ]),
);

/**
 * Errors any request can meet, whatever its route takes: 400 for an unknown query field, a body sent
 * to a route that takes none, or a body that does not parse; 413 and 415 for a body too large or in a
 * type, charset or coding not read (a body is read before the route runs, GET and DELETE included);
 * 500 `internal_error` for the unexpected; 503 `shutting_down` while a process drains.
 */
const ANY_REQUEST = [400, 413, 415, 500, 503] as const;

/**
 * What every rate-limited route answers, added to the document rather than to each route: the
 * errors of `ANY_REQUEST`, the `X-RateLimit-*` headers on every response (errors too, but for 503
 * shutting_down), and `Retry-After` on 429 and on 503 shutting_down. `/health`, `/ready` and `/docs`
 * are not rate limited (docs/decisions.md, Rate limits), nor is signing in, the one API route that
 * declares no security scheme. Request bodies' schemas are closed
 * (`additionalProperties: false`): a field the route does not know is 400 `validation_error`.
 */
export function describeRateLimitedResponses(document: OpenAPIObject): OpenAPIObject {
  for (const [path, item] of Object.entries(document.paths)) {
    if (!path.startsWith('/v1/')) continue;
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const operation = item[method];
      if (!operation) continue;
      closeRequestSchemas(document, operation.requestBody);
      for (const status of ANY_REQUEST) {
        operation.responses[status] ??= {
          description: DESCRIPTIONS[status],
          content: { 'application/json': { schema: { $ref: getSchemaPath(ErrorResponseDto) } } },
        };
      }
      // A route that takes no credential (signing in) has limits of its own, and no X-RateLimit-*.
      const rateLimited = operation.security !== undefined;
      const idempotent = operation.parameters?.some(
        (parameter) => 'name' in parameter && parameter.name === 'Idempotency-Key',
      );
      for (const [status, response] of Object.entries(operation.responses)) {
        if (!response || '$ref' in response) continue;
        response.headers = {
          ...response.headers,
          ...(rateLimited ? (status === '503' ? NOT_ON_SHUTDOWN : RATE_LIMIT_HEADERS) : {}),
          ...(RETRY_AFTER[status] ? { 'Retry-After': RETRY_AFTER[status] } : {}),
          ...(idempotent && status === '201' ? { 'Idempotent-Replayed': IDEMPOTENT_REPLAYED } : {}),
          'X-Request-Id': REQUEST_ID,
        };
      }
    }
  }
  return document;
}

/** Marks the schemas a request body refers to as refusing properties they do not list. */
function closeRequestSchemas(document: OpenAPIObject, body: OperationObject['requestBody']): void {
  if (!body || '$ref' in body) return;
  for (const media of Object.values(body.content)) {
    const reference = media.schema && '$ref' in media.schema ? media.schema.$ref : undefined;
    const schema = reference && document.components?.schemas?.[reference.split('/').pop()!];
    if (schema && !('$ref' in schema)) schema.additionalProperties = false;
  }
}
