import type { NextFunction, Request, Response } from 'express';
import { AppError } from 'src/common/errors/app-error.js';

/** Paths a load balancer probes over plain HTTP; redirecting them would fail its checks. */
const PROBE_PATHS = new Set(['/health', '/ready']);

/** A Host header is a host name or address and an optional port: nothing that could add a path. */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * With FORCE_HTTPS, a request that arrived over plain HTTP is answered 308 with the same URL on https
 * (308 keeps the method and body, unlike 301/302). "Arrived over HTTP" is the socket's own protocol,
 * or, behind a trusted proxy (TRUST_PROXY), the proxy's X-Forwarded-Proto: Express' `req.protocol`.
 * The target is PUBLIC_BASE_URL when configured, else the request's Host (checked to be only a host).
 */
export function httpsRedirect(publicBaseUrl: string | null) {
  return (request: Request, response: Response, next: NextFunction): void => {
    if (request.protocol === 'https' || PROBE_PATHS.has(request.path)) return next();
    const host = request.headers.host;
    if (!publicBaseUrl && (!host || !HOST.test(host))) {
      return next(new AppError(400, 'invalid_host', 'A valid Host header is required'));
    }
    response.redirect(308, `${publicBaseUrl ?? `https://${host}`}${request.originalUrl}`);
  };
}
