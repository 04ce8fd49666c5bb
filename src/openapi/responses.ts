import {
  getSchemaPath,
  type HeaderObject,
  type OpenAPIObject,
  type OperationObject,
  type ReferenceObject,
  type ResponseObject,
} from '@nestjs/swagger';
import { errorBody } from 'src/common/errors/app-error.js';
import type { ErrorCode } from 'src/common/errors/error-codes.js';
import {
  ERRORS_EXTENSION,
  ErrorResponseDto,
  GENERIC_CODES,
  STATUS_DESCRIPTIONS,
} from 'src/common/http/api-errors.decorator.js';
import { PUBLIC_ROUTE_EXTENSION } from 'src/modules/auth/auth.decorators.js';
import { ERROR_EXAMPLES } from 'src/openapi/error-examples.js';

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
  '4XX': { description: 'On 429: seconds to wait before retrying', schema: { type: 'integer' } },
  '503': {
    description:
      '1 with shutting_down (retry on a new connection) and database_unavailable; 5 with session_store_unavailable',
    schema: { type: 'integer' },
  },
  '5XX': {
    description:
      'On 503: 1 with shutting_down (retry on a new connection) and database_unavailable; 5 with session_store_unavailable',
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
 * The errors any route can answer with, whatever it does, grouped under a status range and shared by
 * every rate-limited route (`components.responses`): a body that does not parse, is too large or in a
 * type not read (a body is read before the route runs, GET and DELETE included), a bad credential, a
 * spent rate limit; `internal_error`, and a process draining or without a database. A route lists a
 * status of its own only where it adds codes there, so that an operation shows what is particular to
 * it. A public route reads no credential, so its ranges leave out 401 and 403.
 */
const RANGES = {
  '4XX': { name: 'ClientError', statuses: [400, 401, 403, 413, 415, 429] },
  '5XX': { name: 'ServerError', statuses: [500, 503] },
} as const;

const CREDENTIAL_STATUSES: readonly number[] = [401, 403];

type Operation = OperationObject & {
  [ERRORS_EXTENSION]?: Record<string, ErrorCode[]>;
  [PUBLIC_ROUTE_EXTENSION]?: boolean;
};

/**
 * Writes the security and the responses of every route. API routes get each error status where they
 * declare codes beyond the generic ones (`ApiErrors`), with all the codes they can carry there and an
 * example of each, and the ranges of `RANGES`. Rate-limited routes (all but the public ones: signing
 * in, among the API's) carry the `X-RateLimit-*` headers on every response (errors too, but for 503
 * shutting_down), and `Retry-After` on 429 and on 503: the success responses and the ranges list
 * them. `/health`, `/ready` and `/docs` are not rate limited (docs/decisions.md, Rate limits). Request
 * bodies' schemas are closed (`additionalProperties: false`): a field the route does not know is 400
 * `validation_error`.
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
      const declared = operation[ERRORS_EXTENSION] ?? {};
      delete operation[ERRORS_EXTENSION];
      if (!path.startsWith('/v1/')) continue;
      closeRequestSchemas(document, operation.requestBody);
      addSuccessHeaders(operation, !open);
      addOwnStatuses(operation, declared);
      addRanges(operation, shared, !open);
    }
  }
  return document;
}

/** The headers every response carries, on the responses the route declares itself (its successes). */
function addSuccessHeaders(operation: Operation, rateLimited: boolean): void {
  const idempotent = operation.parameters?.some(
    (parameter) => 'name' in parameter && parameter.name === 'Idempotency-Key',
  );
  for (const [status, response] of Object.entries(operation.responses)) {
    if (!response || '$ref' in response) continue;
    response.headers = {
      ...response.headers,
      ...headersOf(status, rateLimited),
      ...(idempotent && status.startsWith('2') ? { 'Idempotent-Replayed': IDEMPOTENT_REPLAYED } : {}),
    };
  }
}

/**
 * The statuses where a route answers codes of its own, with the generic codes of the status too.
 * Without the headers every response carries (said once, in info.description), which would take most
 * of the room an operation unfolds to in Swagger UI.
 */
function addOwnStatuses(operation: Operation, declared: Record<string, ErrorCode[]>): void {
  for (const [status, own] of Object.entries(declared)) {
    const generic = GENERIC_CODES[Number(status)] ?? [];
    if (own.every((code) => generic.includes(code))) continue;
    const headers: Record<string, HeaderObject> = RETRY_AFTER[status]
      ? { 'Retry-After': RETRY_AFTER[status] }
      : {};
    operation.responses[status] = errorResponse(
      [Number(status)],
      [...new Set([...own, ...generic])],
      headers,
    );
  }
}

/** The ranges: shared by rate-limited routes; a public route's own, without the credential statuses. */
function addRanges(
  operation: Operation,
  shared: Record<string, ResponseObject | ReferenceObject>,
  rateLimited: boolean,
): void {
  for (const [range, { name, statuses }] of Object.entries(RANGES)) {
    const answered = rateLimited
      ? statuses
      : statuses.filter((status) => !CREDENTIAL_STATUSES.includes(status));
    const codes = answered.flatMap((status) => GENERIC_CODES[status] ?? []);
    const response = errorResponse(answered, codes, headersOf(range, rateLimited));
    if (rateLimited) {
      shared[name] ??= response;
      operation.responses[range] = { $ref: `#/components/responses/${name}` };
    } else {
      operation.responses[range] = response;
    }
  }
}

/** The headers of a response, by its status or status range. */
function headersOf(status: string, rateLimited: boolean): Record<string, HeaderObject> {
  return {
    ...(rateLimited ? (status === '503' || status === '5XX' ? NOT_ON_SHUTDOWN : RATE_LIMIT_HEADERS) : {}),
    ...(RETRY_AFTER[status] ? { 'Retry-After': RETRY_AFTER[status] } : {}),
    'X-Request-Id': REQUEST_ID,
  };
}

/** An error response: what its statuses mean and the codes each carries, and the body of each code. */
function errorResponse(
  statuses: readonly number[],
  codes: ErrorCode[],
  headers: Record<string, HeaderObject>,
): ResponseObject {
  const examples = codes.map((code) => {
    const error = ERROR_EXAMPLES[code as keyof typeof ERROR_EXAMPLES];
    if (!error) throw new Error(`No example of the error code ${code} (src/openapi/error-examples.ts)`);
    if (!statuses.includes(error.status)) {
      throw new Error(`${code} is declared under ${statuses.join(', ')}, answered with ${error.status}`);
    }
    return [code, { summary: `${error.status}: ${error.message}`, value: errorBody(error) }] as const;
  });
  const meaning = (status: number) =>
    `${STATUS_DESCRIPTIONS[status] ?? 'Error'}: ${codes
      .filter((code) => ERROR_EXAMPLES[code as keyof typeof ERROR_EXAMPLES].status === status)
      .map((code) => `\`${code}\``)
      .join(', ')}`;
  return {
    description:
      statuses.length === 1
        ? meaning(statuses[0])
        : `What any route can answer:\n${statuses.map((status) => `- ${status} ${meaning(status)}`).join('\n')}`,
    headers,
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
