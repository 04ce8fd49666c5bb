import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import type { Response } from 'express';
import { AppError } from 'src/common/errors/app-error.js';

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

/**
 * The protocol endpoints' errors, with CORS headers, since browser-based clients call them from other
 * origins. OAuth's own errors get OAuth's body. Of the API's errors that reach these routes, a refused
 * request body (415, 400) is OAuth's `invalid_request`; a rate limit keeps the API's 429 body, whose
 * `retry_after` OAuth has no field for.
 */
@Catch(OAuthProtocolError, AppError)
export class OAuthExceptionFilter implements ExceptionFilter {
  catch(exception: OAuthProtocolError | AppError, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    response.set({ 'Access-Control-Allow-Origin': '*', 'Cache-Control': 'no-store' });
    if (exception instanceof AppError && exception.status === 429) {
      response
        .status(429)
        .set(exception.headers ?? {})
        .json({
          error: exception.message,
          code: exception.code,
          details: exception.details,
          retry_after: Number(exception.headers?.['Retry-After'] ?? 1),
        });
      return;
    }
    const error = exception instanceof OAuthProtocolError ? exception : asOAuthError(exception);
    response
      .status(error.status)
      .set(error.headers)
      .json({ error: error.error, error_description: error.description });
  }
}

function asOAuthError(exception: AppError): OAuthProtocolError {
  if (exception.status < 500) return new OAuthProtocolError(400, 'invalid_request', exception.message);
  const error = exception.status === 503 ? 'temporarily_unavailable' : 'server_error';
  return new OAuthProtocolError(exception.status, error, exception.message, exception.headers);
}
