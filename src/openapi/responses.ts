import {
  getSchemaPath,
  type HeaderObject,
  type OpenAPIObject,
  type OperationObject,
  type ResponseObject,
} from '@nestjs/swagger';
import type { ErrorCode } from 'src/common/errors/error-codes.js';
import {
  ERRORS_EXTENSION,
  ErrorResponseDto,
  GENERIC_CODES,
  STATUS_DESCRIPTIONS,
} from 'src/common/http/api-errors.decorator.js';
import { PUBLIC_ROUTE_EXTENSION } from 'src/modules/auth/auth.decorators.js';
import { ERROR_EXAMPLES, exampleBody } from 'src/openapi/error-examples.js';

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
const ANY_REQUEST = [400, 413, 415, 500, 503];

/**
 * The responses a status shares between routes that add no code of their own to it, in
 * `components.responses`: one description and set of examples, rather than a copy under every route.
 */
const SHARED_RESPONSES: Partial<Record<number, string>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  429: 'RateLimited',
  500: 'InternalError',
  503: 'ServiceUnavailable',
};

type Operation = OperationObject & {
  [ERRORS_EXTENSION]?: Record<string, ErrorCode[]>;
  [PUBLIC_ROUTE_EXTENSION]?: boolean;
};

/**
 * Writes the responses of every API route: each error status the route declares (`ApiErrors`), plus
 * those of `ANY_REQUEST`, with the codes it can carry there and an example of each; a status with only
 * the generic codes refers to the shared response. Rate-limited routes (all but the public ones:
 * signing in, among the API's) carry the `X-RateLimit-*` headers on every response (errors
 * too, but for 503 shutting_down), and `Retry-After` on 429 and on 503. `/health`, `/ready` and `/docs`
 * are not rate limited (docs/decisions.md, Rate limits). Request bodies' schemas are closed
 * (`additionalProperties: false`): a field the route does not know is 400 `validation_error`.
 */
export function describeResponses(document: OpenAPIObject): OpenAPIObject {
  document.components ??= {};
  const shared = (document.components.responses ??= {});
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const operation: Operation | undefined = item[method];
      if (!operation) continue;
      // Public routes read no credential: an empty requirement says so (and they are not rate limited).
      const open = operation[PUBLIC_ROUTE_EXTENSION] === true;
      delete operation[PUBLIC_ROUTE_EXTENSION];
      if (open) operation.security = [];
      if (!path.startsWith('/v1/')) continue;
      closeRequestSchemas(document, operation.requestBody);
      const declared = operation[ERRORS_EXTENSION] ?? {};
      delete operation[ERRORS_EXTENSION];
      const rateLimited = !open;
      const idempotent = operation.parameters?.some(
        (parameter) => 'name' in parameter && parameter.name === 'Idempotency-Key',
      );
      for (const [status, response] of Object.entries(operation.responses)) {
        if (!response || '$ref' in response) continue;
        response.headers = {
          ...response.headers,
          ...headersOf(Number(status), rateLimited),
          ...(idempotent && status === '201' ? { 'Idempotent-Replayed': IDEMPOTENT_REPLAYED } : {}),
        };
      }
      const statuses = new Set([...Object.keys(declared).map(Number), ...ANY_REQUEST]);
      for (const status of [...statuses].sort()) {
        const own = declared[status] ?? [];
        const generic = GENERIC_CODES[status] ?? [];
        const response = errorResponse(status, [...new Set([...own, ...generic])], rateLimited);
        const name = SHARED_RESPONSES[status];
        if (rateLimited && name && own.every((code) => generic.includes(code))) {
          shared[name] ??= response;
          operation.responses[status] = { $ref: `#/components/responses/${name}` };
        } else {
          operation.responses[status] = response;
        }
      }
    }
  }
  return document;
}

function headersOf(status: number, rateLimited: boolean): Record<string, HeaderObject> {
  return {
    ...(rateLimited ? (status === 503 ? NOT_ON_SHUTDOWN : RATE_LIMIT_HEADERS) : {}),
    ...(RETRY_AFTER[status] ? { 'Retry-After': RETRY_AFTER[status] } : {}),
    'X-Request-Id': REQUEST_ID,
  };
}

/** An error status's response: what it means, the codes it carries, and the body of each. */
function errorResponse(status: number, codes: ErrorCode[], rateLimited: boolean): ResponseObject {
  const examples = codes.map((code) => {
    const error = ERROR_EXAMPLES[code as keyof typeof ERROR_EXAMPLES];
    if (!error) throw new Error(`No example of the error code ${code} (src/openapi/error-examples.ts)`);
    if (error.status !== status)
      throw new Error(`${code} is declared under ${status}, answered with ${error.status}`);
    return [code, { summary: error.message, value: exampleBody(error) }] as const;
  });
  return {
    description: `${STATUS_DESCRIPTIONS[status] ?? 'Error'}: ${codes.map((code) => `\`${code}\``).join(', ')}`,
    headers: headersOf(status, rateLimited),
    content: {
      'application/json': {
        schema: { $ref: getSchemaPath(ErrorResponseDto) },
        examples: Object.fromEntries(examples),
      },
    },
  };
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
