import { type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { AppError, CommonErrors } from 'src/common/errors/app-error.js';
import { ROUTE_ACCESS, type RouteAccess } from 'src/modules/auth/auth.decorators.js';
import { ANONYMOUS, type Principal } from 'src/modules/auth/auth.types.js';

/** The cookie of the session tier (web apps). No strategy issues sessions yet, so any such cookie is invalid. */
export const SESSION_COOKIE = 'svc_session';

/**
 * Passport strategies, tried in order until one authenticates the request. The session tier plugs in
 * by registering its cookie strategy and adding its name here.
 */
const STRATEGIES = ['bearer'];

function presentsCredentials(request: Request): boolean {
  if (request.headers.authorization !== undefined) return true;
  return (request.headers.cookie ?? '')
    .split(';')
    .some((pair) => pair.trim().startsWith(`${SESSION_COOKIE}=`));
}

/** How many Authorization headers the request came with, as sent (Node's `headers` keep one). */
function authorizationHeaders(request: Request): number {
  return request.rawHeaders.filter((name, i) => i % 2 === 0 && name.toLowerCase() === 'authorization').length;
}

/**
 * First of the three global guards (authenticate → rate limit → authorise). It only finds out who is
 * calling: a request without credentials is anonymous, and a bad credential is remembered in
 * `req.authError` rather than thrown, so the rate limiter can count it (per client address) before
 * AccessGuard refuses it.
 */
@Injectable()
export class AuthenticationGuard extends AuthGuard(STRATEGIES) {
  constructor(private readonly reflector: Reflector) {
    super();
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    request.principal = ANONYMOUS;
    const access = this.reflector.get<RouteAccess | undefined>(ROUTE_ACCESS, context.getHandler());
    if (access?.kind === 'public' || !presentsCredentials(request)) return true;
    if (authorizationHeaders(request) > 1) {
      // Node keeps the first and drops the rest; a proxy that reads the last would see another caller.
      request.authError = CommonErrors.invalidAuthorizationHeader();
      return true;
    }
    try {
      await super.canActivate(context);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      request.authError = err;
    }
    return true;
  }

  /**
   * Passport sees only the credential headers: passport-http-bearer would also take `access_token`
   * from the query string or the body, and tokens in URLs end up in logs and browser histories.
   */
  override getRequest(context: ExecutionContext) {
    const { authorization, cookie } = context.switchToHttp().getRequest<Request>().headers;
    return { headers: { authorization, cookie } };
  }

  override handleRequest<TUser = Principal>(
    err: unknown,
    user: TUser | false,
    _info: unknown,
    context: ExecutionContext,
  ): TUser {
    if (err) throw err instanceof Error ? err : new Error('authentication failed', { cause: err });
    const request = context.switchToHttp().getRequest<Request>();
    if (!user) {
      throw request.headers.authorization !== undefined
        ? CommonErrors.invalidAuthorizationHeader()
        : CommonErrors.invalidSession();
    }
    request.principal = user as unknown as Principal;
    return user;
  }
}
