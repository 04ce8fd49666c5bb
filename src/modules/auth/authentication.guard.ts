import { type ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { AppError, CommonErrors } from 'src/common/errors/app-error.js';
import { ROUTE_ACCESS, type RouteAccess } from 'src/modules/auth/auth.decorators.js';
import { ANONYMOUS, type Principal } from 'src/modules/auth/auth.types.js';

/**
 * First of the three global guards (authenticate → rate limit → authorise). It only finds out who is
 * calling: a request without credentials is anonymous, and a bad credential is remembered in
 * `req.authError` rather than thrown, so the rate limiter can count it (per client address) before
 * AccessGuard refuses it.
 */
@Injectable()
export class AuthenticationGuard extends AuthGuard('bearer') {
  constructor(private readonly reflector: Reflector) {
    super();
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    request.principal = ANONYMOUS;
    const access = this.reflector.get<RouteAccess | undefined>(ROUTE_ACCESS, context.getHandler());
    if (access?.kind === 'public' || request.headers.authorization === undefined) return true;
    try {
      await super.canActivate(context);
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      request.authError = err;
    }
    return true;
  }

  /**
   * Passport sees only the Authorization header: passport-http-bearer would also take `access_token`
   * from the query string or the body, and tokens in URLs end up in logs and browser histories.
   */
  override getRequest(context: ExecutionContext) {
    return { headers: { authorization: context.switchToHttp().getRequest<Request>().headers.authorization } };
  }

  override handleRequest<TUser = Principal>(
    err: unknown,
    user: TUser | false,
    _info: unknown,
    context: ExecutionContext,
  ): TUser {
    if (err) throw err instanceof Error ? err : new Error('bearer authentication failed', { cause: err });
    if (!user) throw CommonErrors.invalidAuthorizationHeader();
    context.switchToHttp().getRequest<Request>().principal = user as unknown as Principal;
    return user;
  }
}
