import type { NextFunction, Request, Response } from 'express';

/** Paths a load balancer probes over plain HTTP; redirecting them would fail its checks. */
const PROBE_PATHS = new Set(['/health', '/ready']);

/**
 * With FORCE_HTTPS, a request that arrived over plain HTTP is answered 308 with the same URL on https
 * (308 keeps the method and body, unlike 301/302). "Arrived over HTTP" is the socket's own protocol,
 * or, behind a trusted proxy (TRUST_PROXY), the proxy's X-Forwarded-Proto: Express' `req.protocol`.
 */
export function httpsRedirect(request: Request, response: Response, next: NextFunction): void {
  if (request.protocol === 'https' || PROBE_PATHS.has(request.path)) return next();
  const host = request.headers.host;
  if (!host) {
    response.status(400).json({ error: 'A Host header is required', code: 'bad_request' });
    return;
  }
  response.redirect(308, `https://${host}${request.originalUrl}`);
}
