import type { ErrorCode } from 'src/common/errors/error-codes.js';

/**
 * An error the API reports to its client: HTTP status, stable machine code, human message and optional
 * details. Modules declare their own codes (see `*.errors.ts`); the global filter turns any AppError into
 * the contract's body `{ error, code, details? }`.
 */
export type ErrorDetails = Record<string, unknown>;

/** The content codings a JSON body may come in: those body-parser decodes with Node.js's zlib. */
export const REQUEST_CODINGS: readonly string[] = ['gzip', 'deflate', 'br', 'zstd'];

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
    /** Extra response headers, such as Retry-After or Location. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

/**
 * An error answered after the request had already created something (the first groups of a bulk
 * upload): `Idempotency-Key` stores it as it stores a success, so that a retry is answered with it
 * rather than creating the same things again.
 */
export class PartlyAppliedError extends AppError {
  constructor(cause: AppError, details: ErrorDetails) {
    super(cause.status, cause.code, cause.message, { ...cause.details, ...details }, cause.headers);
    this.name = 'PartlyAppliedError';
  }
}

/** The contract's error body. */
export interface ErrorBody {
  error: string;
  code: string;
  details?: Record<string, unknown>;
  retry_after?: number;
}

/**
 * The body every error is answered with, whether by the global filter or by the listener itself for a
 * request Node.js refuses before the app sees it.
 */
export function errorBody(error: AppError): ErrorBody {
  const body: ErrorBody = { error: error.message, code: error.code };
  if (error.details !== undefined) body.details = error.details;
  if (error.status === 429) body.retry_after = Number(error.headers?.['Retry-After'] ?? 1);
  return body;
}

/** The errors that do not belong to any one module. */
export const CommonErrors = {
  validation: (errors: FieldIssue[]) => {
    const listed = listedIssues(errors);
    return new AppError(400, 'validation_error', describeIssues(listed), {
      field: errors[0]?.field,
      issue: errors[0]?.issue,
      ...listed,
    });
  },
  invalidJson: (reason: string) =>
    new AppError(400, 'invalid_json', 'The request body is not valid JSON', { issue: reason }),
  invalidContentEncoding: (contentEncoding: string | undefined, issue: string) =>
    new AppError(
      400,
      'invalid_content_encoding',
      `The request body could not be decoded as ${contentEncoding}`,
      {
        content_encoding: contentEncoding ?? null,
        issue,
      },
    ),
  invalidMetadata: (issue: string, field = 'metadata') =>
    new AppError(400, 'invalid_metadata', `Invalid ${field}: ${issue}`, {
      field,
      issue,
      errors: [{ field, issue }],
    }),
  authenticationRequired: () =>
    new AppError(
      401,
      'authentication_required',
      'Authentication required: send "Authorization: Bearer <token>"',
    ),
  invalidApiKey: () => new AppError(401, 'invalid_api_key', 'The API key is invalid or has been revoked'),
  /**
   * No connection to PostgreSQL could be had: none of the pool's freed up in time (many requests
   * waiting on one dataset's lock, say), or the database refused a new one. Nothing ran, and a retry
   * later can succeed.
   */
  databaseUnavailable: () =>
    new AppError(
      503,
      'database_unavailable',
      'The database is busy or unreachable; retry the request',
      undefined,
      {
        'Retry-After': '1',
      },
    ),
  /**
   * Redis, which holds sessions, sign-in limits and consents in progress, cannot be reached: signing
   * in, and any request carrying a session cookie, wait for it. API keys and OAuth tokens do not.
   */
  sessionStoreUnavailable: () =>
    new AppError(
      503,
      'session_store_unavailable',
      'The session store is unreachable; retry shortly',
      undefined,
      { 'Retry-After': '5' },
    ),
  /** A process draining before it stops (see InFlightRequests): the client retries, elsewhere. */
  shuttingDown: () =>
    new AppError(503, 'shutting_down', 'The service is shutting down; retry the request', undefined, {
      Connection: 'close',
      'Retry-After': '1',
    }),
  invalidAccessToken: () => new AppError(401, 'invalid_token', 'The access token is invalid or has expired'),
  invalidSession: () => new AppError(401, 'invalid_session', 'The session is invalid or has expired'),
  invalidAuthorizationHeader: () =>
    new AppError(
      401,
      'invalid_authorization_header',
      'The Authorization header must have the form "Bearer <token>"',
    ),
  insufficientScope: (scope: string) =>
    new AppError(403, 'insufficient_scope', `This credential lacks the "${scope}" permission`, {
      required_scope: scope,
    }),
  forbidden: (message: string, details?: ErrorDetails) => new AppError(403, 'forbidden', message, details),
  notFound: (method: string, path: string) =>
    new AppError(404, 'not_found', `No route for ${method} ${path}`, { method, path }),
  /** A path that has routes, but none for this method; `allowed` is what the Allow header lists. */
  methodNotAllowed: (method: string, path: string, allowed: readonly string[]) =>
    new AppError(
      405,
      'method_not_allowed',
      `${method} is not allowed on ${path}; it takes ${allowed.join(', ')}`,
      { method, path, allowed },
      { Allow: allowed.join(', ') },
    ),
  /** A request the HTTP parser could not read (a malformed request line, an unknown method). */
  badRequest: (issue: string) =>
    new AppError(400, 'bad_request', 'The request is not valid HTTP/1.1', { issue }),
  /** A client that took longer than the listener's bound to send its headers, or its whole request. */
  requestTimeout: (part: 'headers' | 'request', timeoutMs: number) =>
    new AppError(
      408,
      'request_timeout',
      `The ${part === 'headers' ? "request's headers were" : 'request was'} not received within ${timeoutMs} ms`,
      { timeout_ms: timeoutMs },
    ),
  headersTooLarge: (limitBytes: number) =>
    new AppError(431, 'headers_too_large', `The request's headers exceed ${limitBytes} bytes`, {
      limit_bytes: limitBytes,
    }),
  payloadTooLarge: (limitBytes: number) =>
    new AppError(413, 'payload_too_large', `The request body exceeds ${limitBytes} bytes`, {
      limit_bytes: limitBytes,
    }),
  unsupportedMediaType: (received: string | undefined, allowed: readonly string[]) =>
    new AppError(415, 'unsupported_media_type', `Content-Type must be ${allowed.join(' or ')}`, {
      received: received ?? null,
      allowed,
    }),
  /**
   * 415 as RFC 7694 has it, for a body in a content coding the server does not decode: those it does
   * are `decoded` (JSON bodies' by default; an upload is read as sent).
   */
  unsupportedContentEncoding: (received: string | undefined, decoded: readonly string[] = REQUEST_CODINGS) =>
    new AppError(
      415,
      'unsupported_media_type',
      `Content-Encoding ${received} is not supported; send the body as it is` +
        (decoded.length > 0 ? `, or in one of ${decoded.join(', ')}` : ''),
      { content_encoding: received ?? null, allowed: ['identity', ...decoded] },
    ),
  requestAborted: () =>
    new AppError(400, 'request_aborted', 'The client closed the request before its body was read'),
  idempotencyKeyReused: () =>
    new AppError(
      422,
      'idempotency_key_reused',
      'This Idempotency-Key was already used with a different request; use a new key for a new request',
    ),
  idempotencyKeyInvalid: () =>
    new AppError(
      400,
      'invalid_idempotency_key',
      'Idempotency-Key must be 1-255 visible ASCII characters, without spaces',
      {
        field: 'Idempotency-Key',
      },
    ),
  idempotencyKeyInProgress: () =>
    new AppError(
      409,
      'idempotency_key_in_progress',
      'A request with this Idempotency-Key is still being processed; retry shortly',
    ),
  /** A spent budget: the hourly one by default, or another limit's, named by `message` and `details`. */
  rateLimited: (
    retryAfterSeconds: number,
    message = 'Rate limit exceeded; retry after the time given in retry_after',
    details?: ErrorDetails,
  ) =>
    new AppError(429, 'rate_limit_exceeded', message, details, {
      'Retry-After': String(retryAfterSeconds),
    }),
  internal: () => new AppError(500, 'internal_error', 'An unexpected error occurred; it has been logged'),
};

export interface FieldIssue {
  field: string;
  issue: string;
}

/**
 * The most issues an error lists: a body of thousands of unknown fields was answered with each named
 * twice, an error larger than the request.
 */
const MAX_LISTED_ISSUES = 20;

/** `details.errors`: the first issues, and how many more there were (`omitted`) when there were. */
export function listedIssues(errors: FieldIssue[]): { errors: FieldIssue[]; omitted?: number } {
  const listed = errors.slice(0, MAX_LISTED_ISSUES);
  const omitted = errors.length - listed.length;
  return omitted > 0 ? { errors: listed, omitted } : { errors: listed };
}

function describeIssues({ errors, omitted }: { errors: FieldIssue[]; omitted?: number }): string {
  if (errors.length === 0) return 'The request is invalid';
  const more = omitted ? `; and ${omitted} more` : '';
  return `Invalid request: ${errors.map((e) => `${e.field} ${e.issue}`).join('; ')}${more}`;
}
