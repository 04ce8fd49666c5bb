import { types } from 'node:util';
import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Inject } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { AppError, CommonErrors, errorBody } from 'src/common/errors/app-error.js';
import type { ErrorCode } from 'src/common/errors/error-codes.js';
import { allowedMethods } from 'src/common/http/allowed-methods.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { isRedisUnavailable } from 'src/common/redis/redis.module.js';

/** Errors raised by Express' body parsers carry a `type`; these are the ones a client can cause. */
interface BodyParserError {
  type: string;
  status?: number;
  limit?: number;
  message: string;
}

function isBodyParserError(error: unknown): error is BodyParserError {
  return typeof error === 'object' && error !== null && typeof (error as BodyParserError).type === 'string';
}

/**
 * A compressed body that does not decompress, passed on untyped: zlib's error for bad or truncated
 * data (`Z_DATA_ERROR`, `Z_BUF_ERROR`, `Z_NEED_DICT`), Brotli's for a bad format
 * (`ERR__ERROR_FORMAT_PADDING_2`), or zstd's for bad data, named as in its error enum. Their other
 * errors (out of memory, say) are the server's.
 */
const DECOMPRESSION_ERROR =
  /^(Z_(DATA|BUF)_ERROR|Z_NEED_DICT|ERR__ERROR_FORMAT_[A-Z0-9_]+|ZSTD_error_(prefix_unknown|version_unsupported|frameParameter_[A-Za-z0-9_]+|corruption_detected|checksum_wrong|literals_headerWrong|dictionary_wrong|srcSize_wrong))$/;

export function isDecompressionError(error: unknown): error is Error & { code: string } {
  // isNativeError, not instanceof: zlib's errors are the same in every realm (a test's, say).
  return types.isNativeError(error) && DECOMPRESSION_ERROR.test(String((error as { code?: unknown }).code));
}

/**
 * Errors of getting a connection to PostgreSQL, before any statement ran: pg-pool's when none freed up
 * or a new one could not be made in time, and the server's or the network's refusal. A request that
 * failed so changed nothing, and a retry can succeed. A connection dropped mid-request is not among
 * them: its transaction may have committed, and a retry could do the work twice.
 */
const POOL_MESSAGES = new Set([
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
]);
const CONNECT_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND', // the database's host name does not resolve
  'EAI_AGAIN',
  '57P03', // cannot_connect_now: starting up or shutting down
  '53300', // too_many_connections
]);

function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (POOL_MESSAGES.has(error.message)) return true;
  return CONNECT_ERROR_CODES.has(String((error as { code?: unknown }).code));
}

/** What a bearer challenge says about the resource a request is addressed to. */
export interface ChallengedResource {
  /** Where its metadata is published (RFC 9728); null when the request's Host is unusable. */
  metadataUrl: string | null;
  /** The scopes a client should ask for there, when the resource names them. */
  scopes: readonly string[] | null;
}

/**
 * Any error as the contract reports it: an AppError as it is, the body parser's and the database's
 * failures by their codes, anything unexpected as 500 internal_error. Logs what is worth a line: the
 * stack of an unexpected error, one line for a known failure of the service (a timeout, an
 * unavailable provider).
 */
export function reportedError(exception: unknown, request: Request, logger: Logger): AppError {
  const error = toAppError(exception, request);
  if (error.code === 'session_store_unavailable') {
    // Redis is down: /ready says so, and each request it fails says it in one line, without a stack.
    logger.warn({ req_id: request.id, code: error.code, cause: (exception as Error).message }, error.message);
  } else if (!(exception instanceof AppError)) {
    if (error.status >= 500)
      logger.error({ err: exception, req_id: request.id, code: error.code }, 'request failed');
  } else if (error.status >= 500) {
    logger.warn({ req_id: request.id, code: error.code, details: error.details }, error.message);
  }
  return error;
}

/**
 * Turns every error into the contract's body and status. Known errors keep their code; anything
 * unexpected becomes 500 internal_error, is logged with its stack, and leaks nothing to the client.
 */
export interface ErrorAnswerOptions {
  /** The resource a request is addressed to, for the challenges of 401 and 403 (RFC 9728). */
  resourceOf?: (request: Request) => ChallengedResource;
  /**
   * How a path that speaks a protocol of its own answers errors (OAuth's body under `/oauth/`),
   * when no controller of it took the request (a 404 or 405); null for the contract's body.
   */
  protocolAnswer?: (request: Request) => ((response: Response, error: AppError) => void) | null;
}

@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly resourceOf: (request: Request) => ChallengedResource;

  constructor(
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly options: ErrorAnswerOptions = {},
  ) {
    this.resourceOf = options.resourceOf ?? (() => ({ metadataUrl: null, scopes: null }));
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    const error = reportedError(exception, request, this.logger);
    if (response.headersSent) return;
    const protocol = this.options.protocolAnswer?.(request);
    if (protocol) return protocol(response, error);

    for (const [name, value] of Object.entries(error.headers ?? {})) response.setHeader(name, value);
    const challenge = bearerChallenge(error, request, this.resourceOf);
    if (challenge) response.setHeader('WWW-Authenticate', challenge);
    response.status(error.status).json(errorBody(error));
  }
}

function toAppError(exception: unknown, request: Request): AppError {
  if (exception instanceof AppError) return exception;
  // Nest wraps the body parser's errors in HttpExceptions, keeping the original as the cause.
  const cause = exception instanceof HttpException ? exception.cause : exception;
  if (isBodyParserError(cause)) {
    switch (cause.type) {
      case 'entity.parse.failed':
        return CommonErrors.invalidJson(cause.message);
      case 'entity.too.large':
        return CommonErrors.payloadTooLarge(cause.limit ?? 0);
      case 'encoding.unsupported':
        return CommonErrors.unsupportedContentEncoding(request.headers['content-encoding']);
      case 'charset.unsupported': {
        // A route's own media type (`RequestBodyInterceptor` refuses others first), in UTF-8 only.
        const received = request.headers['content-type'];
        const mediaType = received?.split(';')[0].trim().toLowerCase() || 'application/json';
        return CommonErrors.unsupportedMediaType(received, [`${mediaType}; charset=utf-8`]);
      }
      case 'request.aborted':
        return CommonErrors.requestAborted();
    }
  }
  if (isDatabaseUnavailable(cause)) return CommonErrors.databaseUnavailable();
  if (isRedisUnavailable(cause)) return CommonErrors.sessionStoreUnavailable();
  if (isDecompressionError(cause)) {
    return CommonErrors.invalidContentEncoding(request.headers['content-encoding'], cause.message);
  }
  // Express could not decode a path parameter (`/v1/datasets/%E0%A4%A`).
  if (cause instanceof URIError) {
    return CommonErrors.validation([{ field: 'path', issue: 'holds a malformed percent-encoding' }]);
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    if (status === 404) return routeMissing(request);
    if (status === 413) return CommonErrors.payloadTooLarge(0);
    if (status < 500) return new AppError(status, httpCode(status), exception.message);
  }
  return CommonErrors.internal();
}

/**
 * Nest's answer for a request no route took: 405 when the path has routes for other methods (their
 * Allow header listed), else 404. A route's own NotFoundException has a matching method, so stays 404.
 */
function routeMissing(request: Request): AppError {
  const allowed = allowedMethods(request);
  if (allowed.length > 0 && !allowed.includes(request.method)) {
    return CommonErrors.methodNotAllowed(request.method, request.path, allowed);
  }
  return CommonErrors.notFound(request.method, request.path);
}

function httpCode(status: number): ErrorCode {
  const codes: Partial<Record<number, ErrorCode>> = {
    400: 'bad_request',
    401: 'authentication_required',
    403: 'forbidden',
    405: 'method_not_allowed',
    406: 'not_acceptable',
    408: 'request_timeout',
    409: 'conflict',
    415: 'unsupported_media_type',
    422: 'unprocessable_entity',
    429: 'rate_limit_exceeded',
  };
  return codes[status] ?? 'bad_request';
}

/** RFC 6750's error for each way a credential can fail; none when there was no credential. */
const BEARER_ERRORS: Record<string, string> = {
  invalid_api_key: 'invalid_token',
  invalid_token: 'invalid_token',
  invalid_authorization_header: 'invalid_request',
};

/**
 * The challenge a 401 carries (RFC 9110 requires one): how to authenticate, what went wrong, and where
 * to learn how to get a token (RFC 9728, which MCP clients start from). A bearer token that lacks a
 * scope gets one on its 403 too (RFC 6750 3.1), naming the scope, so that a client can ask for it.
 */
function bearerChallenge(
  error: AppError,
  request: Request,
  resourceOf: (request: Request) => ChallengedResource,
): string | null {
  const bearer = /^bearer /i.test(request.headers.authorization ?? '');
  const resource = request.path.startsWith('/v1/') ? resourceOf(request) : null;
  const scopes = resource?.scopes ?? [];
  let params: string;
  if (error.status === 401) {
    const code = BEARER_ERRORS[error.code];
    params = `${code ? `, error="${code}"` : ''}${scopes.length > 0 ? `, scope="${scopes.join(' ')}"` : ''}`;
  } else if (error.status === 403 && error.code === 'insufficient_scope' && bearer) {
    // What the resource asks for, what the token holds, and the scope this request lacked: a client
    // that asks for these keeps what it could do and gains what it tried (MCP's step-up authorization).
    const held = request.principal?.scopes ?? [];
    const wanted = new Set([...scopes, ...held, String(error.details?.required_scope)]);
    params = `, error="insufficient_scope", scope="${[...wanted].join(' ')}"`;
  } else {
    return null;
  }
  const metadata = resource?.metadataUrl;
  return `Bearer realm="dataset-search"${params}${metadata ? `, resource_metadata="${metadata}"` : ''}`;
}
