import { Injectable } from '@nestjs/common';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { newId, randomBase62 } from 'src/common/ids/ids.js';
import { TransactionRunner, type Tx } from 'src/database/transaction.js';
import { AuthTier, type Principal, type Scope, type TokenVerifier } from 'src/modules/auth/auth.types.js';
import type { OAuthClient } from 'src/modules/auth/oauth/clients/clients.repository.js';
import { parseScopes } from 'src/modules/auth/oauth/clients/client-metadata.js';
import {
  type Grant,
  GrantsRepository,
  type NewToken,
  type TokenKind,
} from 'src/modules/auth/oauth/grants/grants.repository.js';
import { OAuthErrors } from 'src/modules/auth/oauth/oauth.errors.js';
import { verifiesChallenge } from 'src/modules/auth/oauth/pkce.js';
import { matchesHash, sha256 } from 'src/modules/auth/secrets.js';
import { ROLE_SCOPES } from 'src/modules/auth/users/roles.js';

export const ACCESS_TOKEN_PREFIX = 'svc_at_';
export const REFRESH_TOKEN_PREFIX = 'svc_rt_';
const ACCESS_TOKEN_SECONDS = 3_600;
const REFRESH_TOKEN_SECONDS = 30 * 86_400;
/** `svc_at_<token id>_<secret>`, as API keys: the id finds the row, the 190-bit secret is checked against its hash. */
const TOKEN_PATTERN = /^svc_(at|rt)_([0-9A-Za-z]{22})_([0-9A-Za-z]{32})$/;

/** The token endpoint's answer (RFC 6749 5.1). */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token?: string;
  scope: string;
}

/** A token's id and secret, when it has the form of one of ours of that kind. */
function parseToken(token: string, kind: TokenKind): { id: string; secret: string } | null {
  const match = TOKEN_PATTERN.exec(token);
  if (!match || (match[1] === 'at') !== (kind === 'access')) return null;
  return { id: `tok_${match[2]}`, secret: match[3] };
}

/** What a grant's tokens are worth now: nothing once it is revoked, or its user disabled, or its client deleted. */
function grantStands(record: { grant: Grant; orphaned: boolean }): boolean {
  return record.grant.revokedAt === null && !record.orphaned;
}

/**
 * Issues, rotates, revokes and verifies OAuth tokens. Access tokens live an hour, refresh tokens 30
 * days and are rotated at every use; presenting a refresh token a second time (someone else holds a
 * copy) revokes its grant, and with it every token of the family, as does a second use of a code.
 */
@Injectable()
export class TokensService implements TokenVerifier {
  readonly prefix = ACCESS_TOKEN_PREFIX;

  constructor(
    private readonly grants: GrantsRepository,
    private readonly transactions: TransactionRunner,
  ) {}

  async exchangeCode(
    client: OAuthClient,
    params: { code: string; codeVerifier: string; redirectUri?: string; resource?: string },
  ): Promise<TokenResponse> {
    const outcome = await this.transactions.run(async (tx) => {
      const grant = await this.grants.findByCodeForUpdate(tx, sha256(params.code));
      if (!grant) return OAuthErrors.invalidGrant('Unknown authorization code');
      if (grant.codeUsedAt !== null) {
        // A second use: whoever holds the code besides the client may hold its tokens too.
        await this.grants.revoke(tx, grant.id);
        return OAuthErrors.invalidGrant('The authorization code was used already; its tokens are revoked');
      }
      // One presentation, whatever its outcome: a code cannot be tried twice.
      await this.grants.markCodeUsed(tx, grant.id);
      if (grant.clientId !== client.id) return OAuthErrors.invalidGrant('Unknown authorization code');
      if (grant.revokedAt !== null || grant.codeExpiresAt.getTime() <= Date.now()) {
        return OAuthErrors.invalidGrant('The authorization code has expired');
      }
      if (params.redirectUri !== undefined && params.redirectUri !== grant.redirectUri) {
        return OAuthErrors.invalidGrant('redirect_uri differs from the authorization request');
      }
      if (!verifiesChallenge(params.codeVerifier, grant.codeChallenge)) {
        return OAuthErrors.invalidGrant('code_verifier does not match the code_challenge');
      }
      if (params.resource !== undefined && params.resource !== grant.resource) {
        return OAuthErrors.invalidTarget(`The code was issued for ${grant.resource}`);
      }
      return this.issue(tx, grant, client, grant.scopes);
    });
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }

  async refresh(
    client: OAuthClient,
    params: { refreshToken: string; scope?: string; resource?: string },
  ): Promise<TokenResponse> {
    if (!client.metadata.grant_types.includes('refresh_token')) {
      throw OAuthErrors.unauthorizedClient('This client did not register the refresh_token grant type');
    }
    const parsed = parseToken(params.refreshToken, 'refresh');
    if (!parsed) throw OAuthErrors.invalidGrant('Unknown refresh token');
    const outcome = await this.transactions.run(async (tx) => {
      const record = await this.grants.findToken(parsed.id, 'refresh', tx);
      if (!record || !matchesHash(parsed.secret, record.secretHash) || record.grant.clientId !== client.id) {
        return OAuthErrors.invalidGrant('Unknown refresh token');
      }
      if (record.usedAt !== null) {
        await this.grants.revoke(tx, record.grant.id);
        return OAuthErrors.invalidGrant('The refresh token was used already; its whole family is revoked');
      }
      if (record.revokedAt !== null || !grantStands(record) || record.expiresAt.getTime() <= Date.now()) {
        return OAuthErrors.invalidGrant('The refresh token has expired or been revoked');
      }
      if (params.resource !== undefined && params.resource !== record.grant.resource) {
        return OAuthErrors.invalidTarget(`The refresh token was issued for ${record.grant.resource}`);
      }
      let scopes = record.scopes;
      if (params.scope !== undefined) {
        scopes = parseScopes(params.scope);
        const extra = scopes.filter((scope) => !record.scopes.includes(scope));
        if (extra.length > 0) return OAuthErrors.invalidScope(`Not granted: ${extra.join(', ')}`);
      }
      await this.grants.markTokenUsed(tx, record.id);
      return this.issue(tx, record.grant, client, scopes);
    });
    if (outcome instanceof Error) throw outcome;
    return outcome;
  }

  /**
   * Revokes a token the client holds (RFC 7009): an access token alone, a refresh token with its
   * whole grant. A token that is unknown, malformed or another client's is ignored, as the RFC asks.
   */
  async revoke(client: OAuthClient, token: string): Promise<void> {
    for (const kind of ['access', 'refresh'] as const) {
      const parsed = parseToken(token, kind);
      if (!parsed) continue;
      const record = await this.grants.findToken(parsed.id, kind);
      if (!record || !matchesHash(parsed.secret, record.secretHash) || record.grant.clientId !== client.id)
        return;
      if (kind === 'access') await this.grants.revokeToken(record.id);
      else await this.grants.revoke(null, record.grant.id);
      return;
    }
  }

  /**
   * Resolves an access token to its principal, on every request that bears one: any failure is 401
   * invalid_token. The scopes are those granted that the user's role still holds; the rate limit
   * counts the person and the client, whatever grant the token is of; the audience is checked by the caller against the
   * resource the request is addressed to.
   */
  async verify(token: string): Promise<Principal> {
    const parsed = parseToken(token, 'access');
    if (!parsed) throw CommonErrors.invalidAccessToken();
    const record = await this.grants.findToken(parsed.id, 'access');
    if (
      !record ||
      !matchesHash(parsed.secret, record.secretHash) ||
      record.revokedAt !== null ||
      !grantStands(record) ||
      record.expiresAt.getTime() <= Date.now()
    ) {
      throw CommonErrors.invalidAccessToken();
    }
    const held = ROLE_SCOPES[record.userRole];
    return {
      tier: AuthTier.OAuth,
      accountId: record.grant.accountId,
      // Counted per person and client: neither a refresh nor a new consent starts a fresh budget.
      credentialId: `${record.grant.userId}:${record.grant.clientId}`,
      scopes: record.scopes.filter((scope) => held.includes(scope)),
      userId: record.grant.userId,
      datasetIds: record.grant.datasetIds,
      audience: record.grant.resource,
    };
  }

  /** A new access token, and a refresh token when the client uses them, for the grant. */
  private async issue(tx: Tx, grant: Grant, client: OAuthClient, scopes: Scope[]): Promise<TokenResponse> {
    const now = Date.now();
    const access = newToken('access', scopes, now + ACCESS_TOKEN_SECONDS * 1000);
    const refresh = client.metadata.grant_types.includes('refresh_token')
      ? newToken('refresh', scopes, now + REFRESH_TOKEN_SECONDS * 1000)
      : null;
    await this.grants.insertTokens(tx, grant.id, refresh ? [access.row, refresh.row] : [access.row]);
    return {
      access_token: access.token,
      token_type: 'Bearer',
      expires_in: ACCESS_TOKEN_SECONDS,
      ...(refresh ? { refresh_token: refresh.token } : {}),
      scope: scopes.join(' '),
    };
  }
}

function newToken(kind: TokenKind, scopes: Scope[], expiresAt: number): { token: string; row: NewToken } {
  const id = newId('tok');
  const secret = randomBase62(32);
  const prefix = kind === 'access' ? ACCESS_TOKEN_PREFIX : REFRESH_TOKEN_PREFIX;
  return {
    token: `${prefix}${id.slice('tok_'.length)}_${secret}`,
    row: { id, kind, secretHash: sha256(secret), scopes, expiresAt: new Date(expiresAt) },
  };
}
