import type { Request, Response } from 'express';

/**
 * The session cookie. Over HTTPS it is `__Host-svc_session`: the prefix makes browsers refuse it
 * unless it is Secure, has Path=/ and names no Domain, so a sibling subdomain cannot plant or
 * shadow it. Only a development server on plain HTTP uses the unprefixed `svc_session`.
 */
export function sessionCookieName(secure: boolean): string {
  return secure ? '__Host-svc_session' : 'svc_session';
}

/** The value of the named cookie in the request's Cookie header (the first, if sent twice). */
export function readCookie(request: Request, name: string): string | undefined {
  for (const pair of (request.headers.cookie ?? '').split(';')) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === name) return pair.slice(separator + 1).trim();
  }
  return undefined;
}

export function setSessionCookie(
  response: Response,
  options: { secure: boolean; value: string; expiresAt: number },
): void {
  response.cookie(sessionCookieName(options.secure), options.value, {
    httpOnly: true,
    secure: options.secure,
    sameSite: 'lax',
    path: '/',
    expires: new Date(options.expiresAt),
  });
}

export function clearSessionCookie(response: Response, secure: boolean): void {
  response.clearCookie(sessionCookieName(secure), { httpOnly: true, secure, sameSite: 'lax', path: '/' });
}
