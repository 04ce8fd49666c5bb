import type { NextFunction, Request, Response } from 'express';
import type { CoreConfig } from 'src/config/core.config.js';
import type { McpConfig } from 'src/modules/mcp/mcp.config.js';
import { isMcpRequest } from 'src/modules/auth/oauth/resources.js';
import { jsonRpcError } from 'src/modules/mcp/json-rpc.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The service's own origin, and the others `MCP_ORIGINS` allows. */
export type OriginSettings = Pick<CoreConfig, 'publicBaseUrl'> & { mcpOrigins: McpConfig['origins'] };

/**
 * The service's own origin, when it is known to be ours: `PUBLIC_BASE_URL`'s, or else the origin the
 * request came to only when its host is a loopback address. Any other Host may be a name an
 * attacker's DNS points at this machine (DNS rebinding), whose pages then count as same-origin.
 */
function ownOrigin(request: Request, config: Pick<CoreConfig, 'publicBaseUrl'>): string | null {
  if (config.publicBaseUrl) return new URL(config.publicBaseUrl).origin;
  // Browsers write the origin's host in lower case, whatever the page's address had.
  const host = (request.get('host') ?? '').toLowerCase();
  return LOOPBACK.has(host.replace(/:\d+$/, '')) ? `${request.protocol}://${host}` : null;
}

/**
 * Why a request to the MCP endpoint is refused for its `Origin`, or null. A browser names the origin
 * of the page that sends a request; other clients send none and pass. A page may call the endpoint
 * from the service's own origin, or from one of `MCP_ORIGINS` (a browser-based MCP client such as
 * MCP Inspector's): no other page can, whatever address it reached the service by.
 */
export function originIssue(request: Request, config: OriginSettings): string | null {
  const origin = request.headers.origin;
  if (origin === undefined) return null;
  if (config.mcpOrigins.includes(origin) || origin === ownOrigin(request, config)) return null;
  return `the origin ${origin} may not call this endpoint (MCP_ORIGINS lists the browser origins that may)`;
}

/**
 * CORS for an allowed page (see `originIssue`): what it may send and what it may read, so that a
 * browser-based client sees the challenge of a 401 and the rate-limit headers.
 */
function allowOrigin(request: Request, response: Response): void {
  const origin = request.headers.origin;
  if (origin === undefined) return;
  response.setHeader('Access-Control-Allow-Origin', origin);
  response.setHeader('Vary', 'Origin');
  response.setHeader(
    'Access-Control-Expose-Headers',
    'WWW-Authenticate, Mcp-Session-Id, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset',
  );
}

/** The answer to a preflight from an allowed page. */
function allowPreflight(response: Response): void {
  response.setHeader('Access-Control-Allow-Methods', 'POST, GET, DELETE');
  response.setHeader(
    'Access-Control-Allow-Headers',
    'Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Session-Id, Last-Event-ID',
  );
  response.setHeader('Access-Control-Max-Age', '600');
}

/**
 * The MCP endpoints' first check, before credentials are read or the body is parsed: a page of an
 * origin not allowed is refused (403, a JSON-RPC error), an allowed one gets CORS headers (on every
 * answer, a 401's challenge included) and its preflights answered.
 */
export function mcpOriginGate(config: OriginSettings) {
  return (request: Request, response: Response, next: NextFunction): void => {
    if (!isMcpRequest(request)) return next();
    const issue = originIssue(request, config);
    if (issue) {
      response.status(403).json(jsonRpcError(-32000, `Forbidden: ${issue}`, { code: 'origin_not_allowed' }));
      return;
    }
    allowOrigin(request, response);
    if (request.method !== 'OPTIONS') return next();
    allowPreflight(response);
    response.status(204).end();
  };
}
