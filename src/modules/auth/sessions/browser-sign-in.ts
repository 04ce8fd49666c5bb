import type { Request, Response } from 'express';
import type { SessionsConfig } from 'src/modules/auth/sessions/sessions.config.js';
import { readCookie, sessionCookieName, setSessionCookie } from 'src/modules/auth/sessions/session-cookie.js';
import type { SessionsService, SignedIn } from 'src/modules/auth/sessions/sessions.service.js';

/**
 * Signs a browser in: checks the credentials, ends the session the browser held (one browser, one
 * session; it may have been planted by someone else) and sets the new session's cookie. Used by the
 * API's sign-in and by the OAuth sign-in page.
 */
export async function signInBrowser(
  sessions: SessionsService,
  config: Pick<SessionsConfig, 'secureCookie'>,
  exchange: { request: Request; response: Response },
  credentials: { email: string; password: string },
): Promise<SignedIn> {
  const { request, response } = exchange;
  const signedIn = await sessions.signIn(credentials.email, credentials.password, request.ip);
  const previous = readCookie(request, sessionCookieName(config.secureCookie));
  if (previous !== undefined) await sessions.signOut(previous);
  setSessionCookie(response, {
    secure: config.secureCookie,
    value: signedIn.id,
    expiresAt: signedIn.session.expiresAt,
  });
  return signedIn;
}
