import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import type { Response } from 'express';

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

@Catch(OAuthProtocolError)
export class OAuthExceptionFilter implements ExceptionFilter {
  catch(exception: OAuthProtocolError, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    response
      .status(exception.status)
      .set({ 'Cache-Control': 'no-store', ...exception.headers })
      .json({ error: exception.error, error_description: exception.description });
  }
}
