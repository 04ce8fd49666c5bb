import type { Request } from 'express';
import type { CoreConfig } from 'src/config/core.config.js';
import type { SessionsConfig } from 'src/modules/auth/sessions/sessions.config.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Why a request that a browser may have sent on its own (a cookie-authenticated write) is not to be
 * trusted, or null. OWASP's Fetch Metadata defence: browsers mark every request with
 * `Sec-Fetch-Site`, which a page cannot forge, so `same-origin` (our own pages) and `none` (typed in
 * by the user) pass; otherwise the `Origin` must be one of `allowedOrigins`, the web apps that are
 * ours. A cookie-authenticated write with neither header comes from no current browser and is refused;
 * signing in (`anonymous`), which rides on no cookie, lets such a client (curl, a server) through.
 * docs/decisions.md (Cross-site requests) says why no CSRF token is needed on top.
 */
export function crossSiteIssue(
  request: Request,
  allowedOrigins: readonly string[],
  options: { anonymous: boolean } = { anonymous: false },
): string | null {
  if (SAFE_METHODS.has(request.method)) return null;
  const site = request.headers['sec-fetch-site'];
  if (site === 'same-origin' || site === 'none') return null;
  const origin = request.headers.origin;
  if (origin !== undefined && allowedOrigins.includes(origin)) return null;
  if (origin !== undefined) return `the origin ${origin} is not allowed to send this request`;
  if (site === undefined && options.anonymous) return null;
  return site === undefined
    ? 'the request carries neither Sec-Fetch-Site nor Origin'
    : `a ${site} request without an allowed Origin`;
}

/**
 * The origins whose pages may send cookie-authenticated writes: `WEB_ORIGINS`, or else the service's
 * own origin, as configured (`PUBLIC_BASE_URL`) or as the request reached it.
 */
export function allowedOrigins(
  request: Request,
  sessions: Pick<SessionsConfig, 'webOrigins'>,
  core: Pick<CoreConfig, 'publicBaseUrl'>,
): readonly string[] {
  if (sessions.webOrigins) return sessions.webOrigins;
  if (core.publicBaseUrl) return [new URL(core.publicBaseUrl).origin];
  return [`${request.protocol}://${request.get('host') ?? ''}`];
}
