import type { TLSSocket } from 'node:tls';
import type { NextFunction, Request, Response } from 'express';
import { AppError } from 'src/common/errors/app-error.js';
import { HOST } from 'src/common/http/host.js';

/** Paths a load balancer probes over plain HTTP; redirecting them would fail its checks. */
const PROBE_PATHS = new Set(['/health', '/ready']);

export interface HttpsRedirectOptions {
  /** PUBLIC_BASE_URL: where every redirect goes, whatever the request's Host says. */
  publicBaseUrl: string | null;
  /**
   * The port the app serves HTTPS on when it terminates TLS itself; a plain request's Host then names
   * the plain listener's port, which the redirect replaces. Null behind a proxy, whose Host is kept.
   */
  httpsPort: number | null;
}

/**
 * A request that arrived over plain HTTP is answered 308 with the same URL on https (308 keeps the method
 * and body, unlike 301/302). "Arrived over HTTP" is the socket's own protocol, or, behind a trusted proxy
 * (TRUST_PROXY) when the app does not serve TLS itself, the proxy's X-Forwarded-Proto. The target is PUBLIC_BASE_URL
 * when configured, else the request's Host (checked to be only a host). Used with FORCE_HTTPS, and on
 * the plain listener of HTTP_REDIRECT_PORT.
 */
export function httpsRedirect({ publicBaseUrl, httpsPort }: HttpsRedirectOptions) {
  const portSuffix = httpsPort === null || httpsPort === 443 ? '' : `:${httpsPort}`;
  return (request: Request, response: Response, next: NextFunction): void => {
    // Serving TLS itself, the socket alone says how a request came: a client of the plain listener
    // could otherwise send X-Forwarded-Proto: https past it (Express believes it under TRUST_PROXY).
    const secure =
      httpsPort === null ? request.protocol === 'https' : (request.socket as TLSSocket).encrypted === true;
    if (secure || PROBE_PATHS.has(request.path)) return next();
    if (publicBaseUrl) return response.redirect(308, `${publicBaseUrl}${request.originalUrl}`);
    const host = HOST.exec(request.headers.host ?? '');
    if (!host) return next(new AppError(400, 'invalid_host', 'A valid Host header is required'));
    const authority = httpsPort === null ? host[0] : `${host[1]}${portSuffix}`;
    response.redirect(308, `https://${authority}${request.originalUrl}`);
  };
}
