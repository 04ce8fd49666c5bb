import { randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { newId } from 'src/common/ids/ids.js';
import { REDIS, type Redis } from 'src/common/redis/redis.module.js';
import { REDIS_CONFIG, type RedisConfig } from 'src/common/redis/redis.config.js';
import { type Scope, SCOPES } from 'src/modules/auth/auth.types.js';
import { parseScopes, SWAGGER_UI_CLIENT_ID } from 'src/modules/auth/oauth/clients/client-metadata.js';
import { ClientsService } from 'src/modules/auth/oauth/clients/clients.service.js';
import type { OAuthClient } from 'src/modules/auth/oauth/clients/clients.repository.js';
import { GrantsRepository } from 'src/modules/auth/oauth/grants/grants.repository.js';
import { OAuthErrors, OAuthProtocolError } from 'src/modules/auth/oauth/oauth.errors.js';
import { OAuthParameters } from 'src/modules/auth/oauth/parameters.js';
import { CHALLENGE } from 'src/modules/auth/oauth/pkce.js';
import { resourcesOf } from 'src/modules/auth/oauth/resources.js';
import { sha256 } from 'src/modules/auth/secrets.js';
import { ROLE_SCOPES } from 'src/modules/auth/users/roles.js';
import type { UserEntity } from 'src/modules/auth/users/user.entity.js';

/** An authorization code is good for this long (and once). */
const CODE_SECONDS = 60;
/** A consent page must be answered within this time. */
const CONSENT_SECONDS = 600;
/** The parameters of an authorization request, past the client and its redirect URI. */
const REQUEST_PARAMETERS = [
  'response_type',
  'code_challenge',
  'code_challenge_method',
  'scope',
  'state',
  'resource',
];

/** A parameter's value, or the refusal of the form it was sent in (`OAuthParameters`). */
function readOrRefusal(params: OAuthParameters, name: string): string | undefined | OAuthProtocolError {
  try {
    return params.optional(name);
  } catch (error) {
    if (error instanceof OAuthProtocolError) return error;
    throw error;
  }
}

/** A checked authorization request (RFC 6749 4.1.1 with PKCE and RFC 8707's resource). */
export interface AuthorizationRequest {
  clientId: string;
  clientName: string;
  redirectUri: string;
  state: string | null;
  codeChallenge: string;
  scopes: Scope[];
  resource: string;
}

/** An authorization request that cannot be sent back to the client: shown to the person as a page. */
export class AuthorizationPageError extends Error {}

/** A request refused in a way the client learns of by its redirect (RFC 6749 4.1.2.1). */
export class AuthorizationRedirectError extends Error {
  constructor(
    readonly clientId: string,
    readonly redirectTo: string,
    readonly refusal: OAuthProtocolError,
  ) {
    super(refusal.description);
  }
}

interface PendingConsent {
  request: AuthorizationRequest;
  userId: string;
}

/** The authorization endpoint's work: checking a request, the consent it waits for, and the code it ends with. */
@Injectable()
export class AuthorizationService {
  constructor(
    private readonly clients: ClientsService,
    private readonly grants: GrantsRepository,
    @Inject(REDIS) private readonly redis: Redis,
    @Inject(REDIS_CONFIG) private readonly redisConfig: RedisConfig,
  ) {}

  /**
   * Checks a request in the order RFC 6749 4.1.2.1 sets: while the client and its redirect URI are
   * not established, nothing may be sent there (a page explains); after, every error goes back to
   * the client by its redirect URI.
   */
  async check(query: Record<string, unknown>, base: string): Promise<AuthorizationRequest> {
    const params = new OAuthParameters(query);
    let clientId: string | undefined;
    let sentRedirectUri: string | undefined;
    try {
      clientId = params.optional('client_id');
      sentRedirectUri = params.optional('redirect_uri');
    } catch {
      throw new AuthorizationPageError(
        'The request names its application or return address more than once, or not as a plain value.',
      );
    }
    const client = clientId ? await this.clients.find(clientId) : null;
    if (!client)
      throw new AuthorizationPageError('The application is not registered here (unknown client_id).');
    const redirectUri = this.redirectUriOf(client, sentRedirectUri, base);

    // The state goes back as sent, unless it was sent in a form that cannot be.
    const stateParam = readOrRefusal(params, 'state');
    const state = typeof stateParam === 'string' ? stateParam : null;
    const refuse = (error: OAuthProtocolError): never => {
      throw new AuthorizationRedirectError(
        client.id,
        redirectWith(redirectUri, { error, state, issuer: base }),
        error,
      );
    };
    if (stateParam instanceof OAuthProtocolError) refuse(stateParam);
    const text = (name: string): string | undefined => {
      const value = readOrRefusal(params, name);
      return value instanceof OAuthProtocolError ? refuse(value) : value;
    };
    for (const name of REQUEST_PARAMETERS) text(name);
    if (text('response_type') !== 'code') {
      refuse(new OAuthProtocolError(400, 'unsupported_response_type', 'response_type must be code'));
    }
    const challenge = text('code_challenge');
    if (!challenge || !CHALLENGE.test(challenge)) {
      refuse(OAuthErrors.invalidRequest('code_challenge is required: PKCE with S256'));
    }
    if (text('code_challenge_method') !== 'S256') {
      refuse(OAuthErrors.invalidRequest('code_challenge_method must be S256 (plain is not accepted)'));
    }
    // Without a scope asked for: every scope but the webhooks', which send the account's events
    // elsewhere and are granted only when a client names them.
    let scopes: Scope[] = SCOPES.filter((scope) => !scope.startsWith('webhooks:'));
    const scope = text('scope') ?? client.metadata.scope;
    if (scope !== undefined && scope.trim() !== '') {
      try {
        scopes = parseScopes(scope);
      } catch (error) {
        refuse(error as OAuthProtocolError);
      }
    }
    const resource = text('resource');
    const resources = resourcesOf(base);
    if (!resource)
      refuse(OAuthErrors.invalidTarget(`resource is required: ${resources.api} or ${resources.mcp}`));
    else if (resource !== resources.api && resource !== resources.mcp) {
      refuse(OAuthErrors.invalidTarget(`Tokens are issued for ${resources.api} and ${resources.mcp} only`));
    }
    return {
      clientId: client.id,
      clientName: client.name ?? client.id,
      redirectUri,
      state,
      codeChallenge: challenge!,
      scopes,
      resource: resource!,
    };
  }

  /**
   * Whether a refused request may be sent back to the client's redirect URI: only for a person signed
   * in who has let this client in before. Otherwise anyone who registers a client could have the
   * service redirect any browser to any address (an open redirector, RFC 9700 4.11.2).
   */
  mayRedirectRefusal(refusal: AuthorizationRedirectError, user: UserEntity | null): Promise<boolean> {
    return user ? this.grants.hasConsented(refusal.clientId, user.id) : Promise.resolve(false);
  }

  /** Remembers a request shown for consent; the id is the consent form's only reference to it. */
  async awaitConsent(request: AuthorizationRequest, user: UserEntity): Promise<string> {
    const id = randomBytes(32).toString('base64url');
    const pending: PendingConsent = { request, userId: user.id };
    await this.redis.set(this.consentKey(id), JSON.stringify(pending), { EX: CONSENT_SECONDS });
    return id;
  }

  /**
   * The person's answer to a consent page, once: the redirect that carries the code (or
   * access_denied) back to the client. Null when the page is unknown, answered already, expired, or
   * shown to someone else: the form cannot be replayed or answered for another user.
   */
  async decide(
    requestId: string,
    user: UserEntity,
    decision: { approve: boolean; datasetIds: string[] | null },
    base: string,
  ): Promise<string | null> {
    const key = this.consentKey(requestId);
    const shown = await this.redis.get(key);
    // Someone else's answer must not use the page up for the person it was shown to.
    if (shown === null || (JSON.parse(shown) as PendingConsent).userId !== user.id) return null;
    const raw = await this.redis.getDel(key);
    if (raw === null) return null; // answered meanwhile, in another request
    const { request } = JSON.parse(raw) as PendingConsent;
    const scopes = grantable(request.scopes, user);
    if (!decision.approve || scopes.length === 0) {
      const error = new OAuthProtocolError(400, 'access_denied', 'The user did not allow the request');
      return redirectWith(request.redirectUri, { error, state: request.state, issuer: base });
    }
    const code = randomBytes(32).toString('base64url');
    await this.grants.insert({
      id: newId('grt'),
      clientId: request.clientId,
      userId: user.id,
      accountId: user.accountId,
      scopes,
      resource: request.resource,
      datasetIds: decision.datasetIds,
      codeHash: sha256(code),
      codeChallenge: request.codeChallenge,
      redirectUri: request.redirectUri,
      codeExpiresAt: new Date(Date.now() + CODE_SECONDS * 1000),
    });
    return redirectWith(request.redirectUri, { code, state: request.state, issuer: base });
  }

  /**
   * The redirect URI to answer at: the one sent, when it is registered for the client exactly as sent
   * (no pattern, no port of its own choosing), or the only one registered when none is sent.
   */
  private redirectUriOf(client: OAuthClient, sent: string | undefined, base: string): string {
    const registered =
      client.id === SWAGGER_UI_CLIENT_ID
        ? [`${base}/docs/oauth2-redirect.html`, `${base}/oauth2-redirect.html`]
        : client.redirectUris;
    if (sent === undefined) {
      if (registered.length === 1) return registered[0];
      throw new AuthorizationPageError(
        'The application did not say where to return (redirect_uri is missing).',
      );
    }
    if (!registered.includes(sent)) {
      throw new AuthorizationPageError(
        'The application asked to return to an address it has not registered.',
      );
    }
    return sent;
  }

  private consentKey(id: string): string {
    return `${this.redisConfig.prefix}:oauth-consent:${id}`;
  }
}

/** The requested scopes the user's role holds: a grant never gives more than its grantor has. */
export function grantable(requested: Scope[], user: Pick<UserEntity, 'role'>): Scope[] {
  return requested.filter((scope) => ROLE_SCOPES[user.role].includes(scope));
}

/** The redirect URI with the response's parameters added to its own query (RFC 6749 4.1.2, RFC 9207 `iss`). */
function redirectWith(
  redirectUri: string,
  response: { code?: string; error?: OAuthProtocolError; state: string | null; issuer: string },
): string {
  const url = new URL(redirectUri);
  if (response.code) url.searchParams.set('code', response.code);
  if (response.error) {
    url.searchParams.set('error', response.error.error);
    url.searchParams.set('error_description', response.error.description);
  }
  if (response.state !== null) url.searchParams.set('state', response.state);
  url.searchParams.set('iss', response.issuer);
  return url.href;
}
