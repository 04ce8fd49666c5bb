import { type ArgumentsHost, Catch, type ExceptionFilter, Inject } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import type { AppError } from 'src/common/errors/app-error.js';
import { reportedError } from 'src/common/filters/all-exceptions.filter.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { errorPage, sendPage } from 'src/modules/auth/oauth/pages.js';

/**
 * An error of the OAuth protocol endpoints (token, registration, revocation), answered with the body
 * RFC 6749 prescribes, `{ error, error_description }`, instead of the API's own.
 */
export class OAuthProtocolError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'OAuthProtocolError';
  }
}

export const OAuthErrors = {
  invalidRequest: (description: string) => new OAuthProtocolError(400, 'invalid_request', description),
  /** Client authentication failed; a client that tried HTTP Basic is challenged to try again (RFC 6749 5.2). */
  invalidClient: (description: string, basic = false) =>
    new OAuthProtocolError(
      401,
      'invalid_client',
      description,
      basic ? { 'WWW-Authenticate': 'Basic realm="dataset-search"' } : {},
    ),
  invalidGrant: (description: string) => new OAuthProtocolError(400, 'invalid_grant', description),
  unauthorizedClient: (description: string) =>
    new OAuthProtocolError(400, 'unauthorized_client', description),
  unsupportedGrantType: (grantType: string) =>
    new OAuthProtocolError(400, 'unsupported_grant_type', `The grant type "${grantType}" is not supported`),
  invalidScope: (description: string) => new OAuthProtocolError(400, 'invalid_scope', description),
  invalidTarget: (description: string) => new OAuthProtocolError(400, 'invalid_target', description),
  invalidRedirectUri: (description: string) =>
    new OAuthProtocolError(400, 'invalid_redirect_uri', description),
  invalidClientMetadata: (description: string) =>
    new OAuthProtocolError(400, 'invalid_client_metadata', description),
};

/** What an error under `/oauth/` answers, in OAuth's body (RFC 6749 5.2). */
export interface OAuthErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: { error: string; error_description: string; retry_after?: number };
}

/**
 * The API's errors as OAuth's body: a spent rate limit is `rate_limit_exceeded` with `retry_after`;
 * the service's own failures are `temporarily_unavailable` (503) or `server_error`; the rest as
 * `clientErrorCode` says.
 */
export function oauthAnswerOf(error: AppError | OAuthProtocolError, path: string): OAuthErrorAnswer {
  if (error instanceof OAuthProtocolError) {
    return {
      status: error.status,
      headers: error.headers,
      body: { error: error.error, error_description: error.description },
    };
  }
  const headers = error.headers ?? {};
  const described = (code: string) => ({ error: code, error_description: error.message });
  if (error.status === 429) {
    const retryAfter = Number(headers['Retry-After'] ?? 1);
    return { status: 429, headers, body: { ...described('rate_limit_exceeded'), retry_after: retryAfter } };
  }
  if (error.status >= 500) {
    const code = error.status === 503 ? 'temporarily_unavailable' : 'server_error';
    return { status: error.status, headers, body: described(code) };
  }
  // OAuth answers a request it cannot take with 400 (RFC 6749 5.2), a body of the wrong type included;
  // what says something of its own keeps its status (no credentials, a refusal, no route, a method).
  const status = [401, 403, 404, 405].includes(error.status) ? error.status : 400;
  return { status, headers, body: described(clientErrorCode(error, path)) };
}

/**
 * A refusal is `access_denied`; a field the endpoint reads that fails validation says what it is
 * (a registration's is `invalid_client_metadata`, a `client_id` that can name no client is
 * `invalid_client`); anything else is `invalid_request`.
 */
function clientErrorCode(error: AppError, path: string): string {
  if (error.status === 403) return 'access_denied';
  if (error.code !== 'validation_error') return 'invalid_request';
  if (path.replace(/\/+$/, '').toLowerCase() === '/oauth/register') return 'invalid_client_metadata';
  return error.details?.field === 'client_id' ? 'invalid_client' : 'invalid_request';
}

/** Sends an OAuth error answer, with the headers every answer of the protocol endpoints has. */
export function sendOAuthAnswer(response: Response, answer: OAuthErrorAnswer): void {
  response
    .status(answer.status)
    .set({ 'Access-Control-Allow-Origin': '*', 'Cache-Control': 'no-store', ...answer.headers })
    .json(answer.body);
}

/**
 * The protocol endpoints' errors, with CORS headers, since browser-based clients call them from other
 * origins: OAuth's own as they are, and every other (a body the endpoint cannot read, a spent rate
 * limit, an unexpected failure, logged as the API's are) as `oauthAnswerOf` says.
 */
@Catch()
export class OAuthExceptionFilter implements ExceptionFilter {
  constructor(@Inject(LOGGER) private readonly logger: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<Request>();
    const response = host.switchToHttp().getResponse<Response>();
    const error =
      exception instanceof OAuthProtocolError ? exception : reportedError(exception, request, this.logger);
    if (response.headersSent) return;
    sendOAuthAnswer(response, oauthAnswerOf(error, request.path));
  }
}

/**
 * The authorization pages' errors (a form or a request the route cannot take, a spent rate limit, an
 * outage): a page for a browser, which asks for HTML first; OAuth's body, as at the protocol
 * endpoints, for any other client.
 */
@Catch()
export class OAuthPageExceptionFilter implements ExceptionFilter {
  constructor(@Inject(LOGGER) private readonly logger: Logger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<Request>();
    const response = host.switchToHttp().getResponse<Response>();
    const error =
      exception instanceof OAuthProtocolError ? exception : reportedError(exception, request, this.logger);
    if (response.headersSent) return;
    const answer = oauthAnswerOf(error, request.path);
    if (request.accepts(['json', 'html']) !== 'html') return sendOAuthAnswer(response, answer);
    response.set(answer.headers);
    sendPage(response, answer.status, 'Error', errorPage(answer.body.error_description));
  }
}
