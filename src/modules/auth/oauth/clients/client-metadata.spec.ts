import { OAuthErrors, OAuthProtocolError } from 'src/modules/auth/oauth/oauth.errors.js';
import {
  parseClientMetadata,
  parseScopes,
  redirectUriIssue,
} from 'src/modules/auth/oauth/clients/client-metadata.js';

const CALLBACK = 'http://127.0.0.1:8976/callback';

/** The OAuth error a registration body is refused with, or null when it is accepted. */
function refusal(body: unknown): { error: string; description: string } | null {
  try {
    parseClientMetadata(body);
  } catch (error) {
    if (error instanceof OAuthProtocolError) return { error: error.error, description: error.description };
    throw error;
  }
  return null;
}

describe('redirectUriIssue', () => {
  it.each([
    'https://app.example.com/callback',
    'https://app.example.com/callback?client=1',
    'http://127.0.0.1:8976/callback',
    'http://localhost/callback',
    'http://[::1]:3000/cb',
  ])('accepts %s', (uri) => {
    expect(redirectUriIssue(uri)).toBeNull();
  });

  it.each([
    ['plain HTTP off the loopback interface', 'http://app.example.com/callback', 'must use https'],
    ['a fragment', 'https://app.example.com/callback#x', 'must not have a fragment'],
    ['an empty fragment', 'https://app.example.com/callback#', 'must not have a fragment'],
    [
      'a user name and password',
      'https://user:pw@app.example.com/cb',
      'must not hold a user name or password',
    ],
    ['a relative URL', '/callback', 'is not an absolute URL'],
    ['another scheme', 'javascript:alert(1)', 'must use https'],
    [
      'a URL of over 2,000 characters',
      `https://app.example.com/${'a'.repeat(2_000)}`,
      'must be a URL string',
    ],
    ['a number', 42, 'must be a URL string'],
  ])('refuses %s', (_case, uri, issue) => {
    expect(redirectUriIssue(uri)).toContain(issue);
  });
});

describe('parseScopes', () => {
  it('reads space-separated scopes once each, in their order', () => {
    expect(parseScopes('search  datasets:read search')).toEqual(['search', 'datasets:read']);
  });

  it('refuses a scope the API does not know with invalid_scope, naming it', () => {
    expect(() => parseScopes('search admin')).toThrow(
      expect.objectContaining({
        error: 'invalid_scope',
        description: expect.stringContaining('Unknown scope admin'),
      }),
    );
  });

  it('refuses it with the error it is given (a registration answers invalid_client_metadata)', () => {
    expect(() => parseScopes('admin', OAuthErrors.invalidClientMetadata)).toThrow(
      expect.objectContaining({ error: 'invalid_client_metadata' }),
    );
  });
});

describe('parseClientMetadata', () => {
  it('takes RFC 7591 defaults for what a registration leaves out: a confidential client of the code grant', () => {
    expect(parseClientMetadata({ redirect_uris: [CALLBACK] })).toEqual({
      redirect_uris: [CALLBACK],
      token_endpoint_auth_method: 'client_secret_basic',
      grant_types: ['authorization_code'],
      response_types: ['code'],
    });
  });

  it('keeps the fields it knows, once each, and ignores the others', () => {
    const metadata = parseClientMetadata({
      redirect_uris: [CALLBACK, CALLBACK],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token', 'refresh_token'],
      client_name: 'My agent',
      client_uri: 'https://agent.example.com',
      scope: 'search search datasets:read',
      contacts: ['ada@example.com'],
      jwks_uri: 'https://agent.example.com/jwks',
    });
    expect(metadata).toEqual({
      redirect_uris: [CALLBACK],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      client_name: 'My agent',
      client_uri: 'https://agent.example.com',
      scope: 'search datasets:read',
      contacts: ['ada@example.com'],
    });
  });

  it.each([
    ['a body that is not an object', ['x'], 'invalid_client_metadata'],
    ['no redirect URIs', {}, 'invalid_redirect_uri'],
    ['an empty list of redirect URIs', { redirect_uris: [] }, 'invalid_redirect_uri'],
    ['eleven redirect URIs', { redirect_uris: Array<string>(11).fill(CALLBACK) }, 'invalid_redirect_uri'],
    [
      'a plain-HTTP redirect URI off the loopback',
      { redirect_uris: ['http://example.com/cb'] },
      'invalid_redirect_uri',
    ],
  ])('refuses %s with %s', (_case, body, error) => {
    expect(refusal(body)?.error).toBe(error);
  });

  it.each([
    ['an unknown authentication method', { token_endpoint_auth_method: 'private_key_jwt' }],
    ['a grant type it does not offer', { grant_types: ['authorization_code', 'client_credentials'] }],
    ['grant types without authorization_code', { grant_types: ['refresh_token'] }],
    ['a response type other than code', { response_types: ['token'] }],
    ['a client name that is not a string', { client_name: 7 }],
    ['a client URI that is not http(s)', { client_uri: 'ftp://agent.example.com' }],
    ['a logo URI with a password', { logo_uri: 'https://u:p@agent.example.com/logo.png' }],
    ['a scope the API does not know', { scope: 'search admin' }],
    ['a scope that is not a string', { scope: ['search'] }],
    ['contacts that are not a list of strings', { contacts: 'ada@example.com' }],
    ['more than 20 contacts', { contacts: Array<string>(21).fill('ada@example.com') }],
  ])('refuses %s with invalid_client_metadata', (_case, fields) => {
    expect(refusal({ redirect_uris: [CALLBACK], ...fields })?.error).toBe('invalid_client_metadata');
  });
});
