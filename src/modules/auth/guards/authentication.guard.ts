import { type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { AppError, CommonErrors } from 'src/common/errors/app-error.js';
import { CORE_CONFIG, type CoreConfig } from 'src/config/core.config.js';
import { SESSIONS_CONFIG, type SessionsConfig } from 'src/modules/auth/sessions/sessions.config.js';
import { ROUTE_ACCESS, type RouteAccess } from 'src/modules/auth/auth.decorators.js';
import { ANONYMOUS, type Principal } from 'src/modules/auth/auth.types.js';
import { resourceOfRequest } from 'src/modules/auth/oauth/resources.js';
import { allowedOrigins, crossSiteIssue } from 'src/modules/auth/sessions/csrf.js';
import { readCookie, sessionCookieName } from 'src/modules/auth/sessions/session-cookie.js';
import { SessionErrors } from 'src/modules/auth/sessions/sessions.errors.js';
import { SessionsService } from 'src/modules/auth/sessions/sessions.service.js';

/** How many Authorization headers the request came with, as sent (Node's `headers` keep one). */
function authorizationHeaders(request: Request): number {
  return request.rawHeaders.filter((name, i) => i % 2 === 0 && name.toLowerCase() === 'authorization').length;
}

/**
 * The first of the global guards (GLOBAL_GUARDS). It only finds out who is calling: a request
 * without credentials is anonymous, and a bad credential is remembered in
 * `req.authError` rather than thrown, so the rate limiter can count it (per client address) before
 * AccessGuard refuses it.
 *
 * A request is authenticated by its Authorization header when it has one (API keys and OAuth tokens,
 * through passport's bearer strategy), else by its session cookie; never by both, so that a bad
 * token is not rescued by a cookie the browser happened to send along.
 */
@Injectable()
export class AuthenticationGuard extends AuthGuard('bearer') {
  private readonly cookieName: string;

  constructor(
    private readonly reflector: Reflector,
    private readonly sessions: SessionsService,
    @Inject(CORE_CONFIG) private readonly core: CoreConfig,
    @Inject(SESSIONS_CONFIG) private readonly sessionsConfig: SessionsConfig,
  ) {
    super();
    this.cookieName = sessionCookieName(sessionsConfig.secureCookie);
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    request.principal = ANONYMOUS;
    const access = this.reflector.get<RouteAccess | undefined>(ROUTE_ACCESS, context.getHandler());
    if (access?.kind === 'public') return true;
    try {
      if (request.headers.authorization !== undefined) {
        // Node keeps the first and drops the rest; a proxy that reads the last would see another caller.
        if (authorizationHeaders(request) > 1) throw CommonErrors.invalidAuthorizationHeader();
        await super.canActivate(context);
        const audience = request.principal?.audience ?? null;
        // An OAuth token works only at the resource it was issued for (RFC 8707): never another's.
        if (audience !== null && audience !== resourceOfRequest(request, this.core)) {
          throw CommonErrors.invalidAccessToken();
        }
        return true;
      }
      const cookie = readCookie(request, this.cookieName);
      if (cookie !== undefined) await this.authenticateSession(request, cookie);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      request.principal = ANONYMOUS;
      request.authError = err;
    }
    return true;
  }

  /**
   * A browser sends the cookie with every request to us, including those another site's page makes
   * it send: a write is believed only when it comes from one of our origins (see `crossSiteIssue`),
   * checked before the session is looked up, so that a forged request does not even keep it alive.
   */
  private async authenticateSession(request: Request, cookie: string): Promise<void> {
    const issue = crossSiteIssue(request, allowedOrigins(request, this.sessionsConfig, this.core));
    if (issue) throw SessionErrors.csrfRejected(issue);
    const signedIn = await this.sessions.authenticate(cookie);
    request.principal = signedIn.principal;
    request.signedIn = { ...signedIn, cookie };
  }

  /**
   * Passport sees only the Authorization header: passport-http-bearer would also take `access_token`
   * from the query string or the body, and tokens in URLs end up in logs and browser histories.
   */
  override getRequest(context: ExecutionContext) {
    const { authorization } = context.switchToHttp().getRequest<Request>().headers;
    return { headers: { authorization } };
  }

  override handleRequest<TUser = Principal>(
    err: unknown,
    user: TUser | false,
    _info: unknown,
    context: ExecutionContext,
  ): TUser {
    if (err) throw err instanceof Error ? err : new Error('authentication failed', { cause: err });
    if (!user) throw CommonErrors.invalidAuthorizationHeader();
    context.switchToHttp().getRequest<Request>().principal = user as unknown as Principal;
    return user;
  }
}
