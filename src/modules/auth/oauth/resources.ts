import type { Request } from 'express';
import { AppError } from 'src/common/errors/app-error.js';
import { HOST } from 'src/common/http/host.js';
import type { CoreConfig } from 'src/config/core.config.js';
import type { Scope } from 'src/modules/auth/auth.types.js';

/**
 * The path of the MCP endpoint, a resource of its own together with its per-dataset endpoints
 * (`/v1/mcp/datasets/{id}`); every other route under /v1 is the REST API's, `/v1/mcp/query` included.
 */
export const MCP_PATH = '/v1/mcp';

/**
 * The scopes an MCP client is asked for (the `scope` of the endpoint's challenges): those its tools
 * use, which the person's role then caps. Asked for at once rather than when an agent first writes:
 * a client holding a refresh token answers a 403 by refreshing (the SDK's, 1.32), and a refresh
 * never widens a grant.
 */
export const MCP_SCOPES: readonly Scope[] = ['search', 'datasets:read', 'documents:read', 'documents:write'];

/**
 * Where this service is reached: `PUBLIC_BASE_URL`, or else the origin the request came to (a
 * development server). It is the authorization server's issuer, and the root of the resources tokens
 * are issued for.
 */
export function serviceBase(request: Request, config: Pick<CoreConfig, 'publicBaseUrl'>): string {
  if (config.publicBaseUrl) return config.publicBaseUrl;
  const host = request.get('host') ?? '';
  // Only a host and port: anything else would smuggle a path or a query into the issuer.
  if (!HOST.test(host)) throw new AppError(400, 'invalid_host', 'A valid Host header is required');
  return `${request.protocol}://${host}`;
}

/** The two resources (RFC 8707) a token can be issued for: the REST API and the MCP endpoint. */
export function resourcesOf(base: string): { api: string; mcp: string } {
  return { api: `${base}/v1`, mcp: `${base}${MCP_PATH}` };
}

/** Whether a request is addressed to an MCP endpoint, as routing sees it (case and trailing slash aside). */
export function isMcpRequest(request: Request): boolean {
  const path = request.path.toLowerCase().replace(/\/+$/, '');
  return path === MCP_PATH || /^\/v1\/mcp\/datasets\/[^/]+$/.test(path);
}

/** The resource a request is addressed to, which its token's audience must be. */
export function resourceOfRequest(request: Request, config: Pick<CoreConfig, 'publicBaseUrl'>): string {
  const resources = resourcesOf(serviceBase(request, config));
  return isMcpRequest(request) ? resources.mcp : resources.api;
}

/**
 * Where the metadata of the resource a request is addressed to is published (RFC 9728), for the
 * challenge of a 401; null when the request's Host is unusable.
 */
export function resourceMetadataUrl(
  request: Request,
  config: Pick<CoreConfig, 'publicBaseUrl'>,
): string | null {
  try {
    const base = serviceBase(request, config);
    return `${base}/.well-known/oauth-protected-resource${isMcpRequest(request) ? MCP_PATH : '/v1'}`;
  } catch {
    return null;
  }
}

/** Whether a path is the authorization server's (`/oauth/...`), whose errors have OAuth's body. */
export function isOAuthPath(path: string): boolean {
  return /^\/oauth(\/|$)/i.test(path);
}
