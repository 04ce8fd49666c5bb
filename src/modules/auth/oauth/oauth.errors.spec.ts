import { AppError, CommonErrors } from 'src/common/errors/app-error.js';
import { OAuthErrors, oauthAnswerOf } from 'src/modules/auth/oauth/oauth.errors.js';

const validation = (field: string) => CommonErrors.validation([{ field, issue: 'is not allowed' }]);

describe('oauthAnswerOf', () => {
  it("answers OAuth's own errors as they are, with their headers", () => {
    expect(oauthAnswerOf(OAuthErrors.invalidClient('Unknown client_id', true), '/oauth/token')).toEqual({
      status: 401,
      headers: { 'WWW-Authenticate': 'Basic realm="dataset-search"' },
      body: { error: 'invalid_client', error_description: 'Unknown client_id' },
    });
  });

  it('answers a spent rate limit with rate_limit_exceeded and retry_after beside Retry-After', () => {
    expect(oauthAnswerOf(CommonErrors.rateLimited(42), '/oauth/token')).toEqual({
      status: 429,
      headers: { 'Retry-After': '42' },
      body: {
        error: 'rate_limit_exceeded',
        error_description: 'Rate limit exceeded; retry after the time given in retry_after',
        retry_after: 42,
      },
    });
  });

  it("answers the service's own failures with temporarily_unavailable (503) or server_error", () => {
    const unavailable = oauthAnswerOf(CommonErrors.sessionStoreUnavailable(), '/oauth/authorize');
    expect([unavailable.status, unavailable.body.error]).toEqual([503, 'temporarily_unavailable']);
    const failed = oauthAnswerOf(CommonErrors.internal(), '/oauth/token');
    expect([failed.status, failed.body.error]).toEqual([500, 'server_error']);
  });

  it.each([
    ['a body too large', CommonErrors.payloadTooLarge(65_536)],
    ['a body of the wrong media type', CommonErrors.unsupportedMediaType('text/plain', ['application/json'])],
    ['malformed JSON', CommonErrors.invalidJson('Unexpected token')],
  ])('answers %s with 400 invalid_request, as OAuth refuses what it cannot take', (_case, error) => {
    expect(oauthAnswerOf(error, '/oauth/token')).toMatchObject({
      status: 400,
      body: { error: 'invalid_request', error_description: error.message },
    });
  });

  it('keeps the status of what says something of its own: no credentials, no route, a method', () => {
    const statuses = [
      CommonErrors.authenticationRequired(),
      CommonErrors.notFound('GET', '/oauth/nothing'),
      CommonErrors.methodNotAllowed('DELETE', '/oauth/token', ['POST', 'OPTIONS']),
    ].map((error) => [oauthAnswerOf(error, '/oauth/x').status, oauthAnswerOf(error, '/oauth/x').body.error]);
    expect(statuses).toEqual([
      [401, 'invalid_request'],
      [404, 'invalid_request'],
      [405, 'invalid_request'],
    ]);
  });

  it('answers a refusal with 403 access_denied', () => {
    expect(oauthAnswerOf(CommonErrors.forbidden('No'), '/oauth/authorize')).toMatchObject({
      status: 403,
      body: { error: 'access_denied' },
    });
  });

  it('answers a registration that fails validation with invalid_client_metadata, however its path is spelled', () => {
    for (const path of ['/oauth/register', '/OAuth/Register/', '/oauth/register//']) {
      expect(oauthAnswerOf(validation('client_name'), path).body.error).toBe('invalid_client_metadata');
    }
  });

  it('answers a client_id that fails validation with invalid_client, and any other field with invalid_request', () => {
    expect(oauthAnswerOf(validation('client_id'), '/oauth/token').body.error).toBe('invalid_client');
    expect(oauthAnswerOf(validation('token'), '/oauth/revoke').body.error).toBe('invalid_request');
  });

  it('keeps the headers of an API error, and gives none when it has none', () => {
    const withHeaders = new AppError(400, 'invalid_json', 'Bad', undefined, { 'X-Custom': '1' });
    expect(oauthAnswerOf(withHeaders, '/oauth/token').headers).toEqual({ 'X-Custom': '1' });
    expect(oauthAnswerOf(CommonErrors.invalidJson('x'), '/oauth/token').headers).toEqual({});
  });
});
