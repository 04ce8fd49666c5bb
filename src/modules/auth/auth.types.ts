import type { AppError } from 'src/common/errors/app-error.js';

/** The contract's four ways in, each with its own hourly limit. */
export enum AuthTier {
  ApiKey = 'api_key',
  OAuth = 'oauth',
  Session = 'session',
  Anonymous = 'anonymous',
}

/** Permissions a route can require. API keys hold all of them for their own account. */
export const SCOPES = [
  'datasets:read',
  'datasets:write',
  'documents:read',
  'documents:write',
  'search',
  'webhooks:read',
  'webhooks:write',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Who is calling: resolved once per request by the authentication guard. */
export interface Principal {
  tier: AuthTier;
  /** Null only for anonymous callers. */
  accountId: string | null;
  /**
   * What the hourly rate limit is counted for: the API key; for OAuth, the person and the client
   * (`usr_...:cli_...`: every grant of one person to one client shares a budget); or the user of a
   * session (all of one person's sessions share a budget).
   */
  credentialId: string | null;
  scopes: readonly Scope[];
  /** The person behind a session or an OAuth token; null for API keys and anonymous callers. */
  userId: string | null;
  /** The account's datasets this credential may touch; null: all of them (an OAuth grant may choose). */
  datasetIds: readonly string[] | null;
  /** The resource (RFC 8707) an OAuth token was issued for, which a request must be addressed to. */
  audience: string | null;
}

export const ANONYMOUS: Principal = Object.freeze({
  tier: AuthTier.Anonymous,
  accountId: null,
  credentialId: null,
  scopes: Object.freeze(['datasets:read', 'documents:read', 'search'] as Scope[]),
  userId: null,
  datasetIds: null,
  audience: null,
});

/**
 * Who did something, as events name it (`created_by`, `deleted_by`, ...): the person (`usr_...`) for a
 * session or an OAuth token, the API key (`key_...`) for a key.
 */
export function actorOf(principal: AccountPrincipal): string {
  return principal.userId ?? principal.credentialId ?? principal.accountId;
}

/** A principal that belongs to an account. */
export type AccountPrincipal = Principal & { accountId: string };

export function isAuthenticated(principal: Principal): principal is AccountPrincipal {
  return principal.accountId !== null;
}

/**
 * Checks bearer tokens of one kind, recognised by their prefix (`svc_sk_` API keys, `svc_at_` OAuth
 * access tokens). A new tier plugs in by adding its verifier to GuardsModule's TOKEN_VERIFIERS.
 */
export interface TokenVerifier {
  readonly prefix: string;
  verify(token: string): Promise<Principal>;
}

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by AuthenticationGuard on every request that reaches a controller. */
    principal?: Principal;
    /** A credential that failed; reported only where the route needs authentication. */
    authError?: AppError;
  }
}
