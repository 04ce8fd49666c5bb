import type { Request } from 'express';
import type { AppConfig } from 'src/config/app-config.js';

/** The path of the MCP endpoint, a resource of its own; every other route under /v1 is the REST API's. */
export const MCP_PATH = '/v1/mcp';

/**
 * Where this service is reached: `PUBLIC_BASE_URL`, or else the origin the request came to (a
 * development server). It is the authorization server's issuer, and the root of the resources tokens
 * are issued for.
 */
export function serviceBase(request: Request, config: Pick<AppConfig, 'publicBaseUrl'>): string {
  return config.publicBaseUrl ?? `${request.protocol}://${request.get('host') ?? 'localhost'}`;
}

/** The two resources (RFC 8707) a token can be issued for: the REST API and the MCP endpoint. */
export function resourcesOf(base: string): { api: string; mcp: string } {
  return { api: `${base}/v1`, mcp: `${base}${MCP_PATH}` };
}

/** The resource a request is addressed to, which its token's audience must be. */
export function resourceOfRequest(request: Request, config: Pick<AppConfig, 'publicBaseUrl'>): string {
  const resources = resourcesOf(serviceBase(request, config));
  return request.path === MCP_PATH ? resources.mcp : resources.api;
}
