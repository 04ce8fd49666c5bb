import { type Scope, SCOPES } from 'src/modules/auth/auth.types.js';
import { OAuthErrors } from 'src/modules/auth/oauth/oauth.errors.js';

/** The public client Swagger UI signs in with: its redirect page is on this service (docs/auth.md). */
export const SWAGGER_UI_CLIENT_ID = 'swagger-ui';

export const AUTH_METHODS = ['none', 'client_secret_post', 'client_secret_basic'] as const;
export type AuthMethod = (typeof AUTH_METHODS)[number];
export const GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

/** What a client registers (RFC 7591 2), as kept and shown back; other fields sent are ignored. */
export interface ClientMetadata {
  redirect_uris: string[];
  token_endpoint_auth_method: AuthMethod;
  grant_types: GrantType[];
  response_types: ['code'];
  client_name?: string;
  client_uri?: string;
  logo_uri?: string;
  tos_uri?: string;
  policy_uri?: string;
  scope?: string;
  contacts?: string[];
  software_id?: string;
  software_version?: string;
}

const MAX_REDIRECT_URIS = 10;
const MAX_TEXT = 2_000;
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);
const URL_FIELDS = ['client_uri', 'logo_uri', 'tos_uri', 'policy_uri'] as const;
const TEXT_FIELDS = ['client_name', 'software_id', 'software_version'] as const;

/**
 * Why a redirect URI cannot be registered, or null. It must be absolute, without a fragment, and
 * HTTPS, or plain HTTP to the loopback interface (RFC 8252 7.3, native apps and local tools): any other
 * plain-HTTP address would carry the authorization code in the clear.
 */
export function redirectUriIssue(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > MAX_TEXT) return 'must be a URL string';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return `${JSON.stringify(value)} is not an absolute URL`;
  }
  if (url.hash !== '' || value.includes('#')) return `${value} must not have a fragment`;
  // A code sent to `https://user:pw@host/` would also hand the browser credentials to use there.
  if (url.username !== '' || url.password !== '') return `${value} must not hold a user name or password`;
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return null;
  return `${value} must use https, or http on a loopback address (127.0.0.1, [::1], localhost)`;
}

/** The space-separated scopes, each one the API knows; throws invalid_scope otherwise. */
export function parseScopes(scope: string, error = OAuthErrors.invalidScope): Scope[] {
  const requested = scope.split(' ').filter(Boolean);
  const unknown = requested.filter((name) => !(SCOPES as readonly string[]).includes(name));
  if (unknown.length > 0) throw error(`Unknown scope ${unknown.join(', ')}; known: ${SCOPES.join(' ')}`);
  return [...new Set(requested)] as Scope[];
}

/** A registration request checked against RFC 7591 and this server's rules; throws OAuth's errors. */
export function parseClientMetadata(body: unknown): ClientMetadata {
  const invalid = OAuthErrors.invalidClientMetadata;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalid('The body must be a JSON object');
  const input = body as Record<string, unknown>;

  const uris = input.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_REDIRECT_URIS) {
    throw OAuthErrors.invalidRedirectUri(`redirect_uris must be an array of 1-${MAX_REDIRECT_URIS} URLs`);
  }
  for (const uri of uris) {
    const issue = redirectUriIssue(uri);
    if (issue) throw OAuthErrors.invalidRedirectUri(`redirect_uris: ${issue}`);
  }

  const method = input.token_endpoint_auth_method ?? 'client_secret_basic';
  if (!(AUTH_METHODS as readonly unknown[]).includes(method)) {
    throw invalid(`token_endpoint_auth_method must be one of ${AUTH_METHODS.join(', ')}`);
  }
  const grantTypes = input.grant_types ?? ['authorization_code'];
  if (
    !Array.isArray(grantTypes) ||
    grantTypes.length === 0 ||
    grantTypes.some((type) => !(GRANT_TYPES as readonly unknown[]).includes(type))
  ) {
    throw invalid(`grant_types must be a non-empty list of ${GRANT_TYPES.join(', ')}`);
  }
  if (!grantTypes.includes('authorization_code')) {
    throw invalid('grant_types must include authorization_code, the only way to obtain tokens here');
  }
  const responseTypes = input.response_types ?? ['code'];
  if (!Array.isArray(responseTypes) || responseTypes.length !== 1 || responseTypes[0] !== 'code') {
    throw invalid('response_types must be ["code"]');
  }

  const metadata: ClientMetadata = {
    redirect_uris: [...new Set(uris as string[])],
    token_endpoint_auth_method: method as AuthMethod,
    grant_types: [...new Set(grantTypes as GrantType[])],
    response_types: ['code'],
  };
  for (const field of TEXT_FIELDS) {
    const value = input[field];
    if (value === undefined) continue;
    if (typeof value !== 'string' || value.length > MAX_TEXT) throw invalid(`${field} must be a string`);
    metadata[field] = value;
  }
  for (const field of URL_FIELDS) {
    const value = input[field];
    if (value === undefined) continue;
    const url = typeof value === 'string' && value.length <= MAX_TEXT ? URL.parse(value) : null;
    if (!url || !/^https?:\/\//.test(value as string)) throw invalid(`${field} must be an http(s) URL`);
    if (url.username !== '' || url.password !== '') {
      throw invalid(`${field} must not hold a user name or password`);
    }
    metadata[field] = value as string;
  }
  if (input.scope !== undefined) {
    if (typeof input.scope !== 'string') throw invalid('scope must be a string of space-separated scopes');
    metadata.scope = parseScopes(input.scope, invalid).join(' ');
  }
  if (input.contacts !== undefined) {
    const contacts = input.contacts;
    if (
      !Array.isArray(contacts) ||
      contacts.length > 20 ||
      contacts.some((c) => typeof c !== 'string' || c.length > 320)
    ) {
      throw invalid('contacts must be a list of email addresses');
    }
    metadata.contacts = contacts as string[];
  }
  return metadata;
}
