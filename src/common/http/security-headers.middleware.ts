import type { NextFunction, Request, Response } from 'express';

/** A year: long enough to matter, the usual value (RFC 6797 leaves it to the server). */
export const HSTS = 'max-age=31536000';

/**
 * Headers on every answer: `X-Content-Type-Options: nosniff`, so that no browser reads a JSON error
 * (which may echo what a caller sent) as HTML or script; no framing; and, when the service is served over HTTPS
 * only (`FORCE_HTTPS` or its own TLS), `Strict-Transport-Security` on HTTPS answers, so that a browser
 * never sends a credential in the clear to it again.
 */
export function securityHeaders({ httpsOnly }: { httpsOnly: boolean }) {
  return (request: Request, response: Response, next: NextFunction): void => {
    response.setHeader('X-Content-Type-Options', 'nosniff');
    // No page of the service (Swagger UI, the OAuth pages) is for another site to frame, where a
    // click could be stolen; its JSON answers lose nothing by it either.
    response.setHeader('X-Frame-Options', 'DENY');
    response.setHeader('Content-Security-Policy', "frame-ancestors 'none'");
    if (httpsOnly && request.secure) {
      response.setHeader('Strict-Transport-Security', HSTS);
    }
    next();
  };
}
