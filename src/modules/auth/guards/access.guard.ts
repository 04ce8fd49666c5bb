import { type CanActivate, type ExecutionContext, Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { ROUTE_ACCESS, type RouteAccess } from 'src/modules/auth/auth.decorators.js';
import { ANONYMOUS, AuthTier, isAuthenticated } from 'src/modules/auth/auth.types.js';
import { routeHandlers } from 'src/modules/auth/guards/route-handlers.js';
import { SessionErrors } from 'src/modules/auth/sessions/sessions.errors.js';

/**
 * The last of the global guards (GLOBAL_GUARDS): applies the route's declared access rule. Deny by
 * default: the app refuses to boot when a route declares none, and such a route would be refused to
 * everybody anyway.
 */
@Injectable()
export class AccessGuard implements CanActivate, OnModuleInit {
  constructor(
    private readonly reflector: Reflector,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onModuleInit(): void {
    const undeclared = routeHandlers(this.discovery, this.scanner, this.reflector).filter(
      ({ handler }) => !this.reflector.get<RouteAccess | undefined>(ROUTE_ACCESS, handler),
    );
    if (undeclared.length > 0) {
      throw new Error(
        `Routes without an access rule (@Auth, @PublicReadable or @Public): ${undeclared.map(({ name }) => name).join(', ')}`,
      );
    }
  }

  canActivate(context: ExecutionContext): boolean {
    const access = this.reflector.get<RouteAccess | undefined>(ROUTE_ACCESS, context.getHandler());
    if (!access) throw CommonErrors.forbidden('This route is not open to any caller');
    if (access.kind === 'public') return true;

    const request = context.switchToHttp().getRequest<Request>();
    if (request.authError) throw request.authError;
    const principal = request.principal ?? ANONYMOUS;
    if (access.kind === 'session') {
      if (principal.tier !== AuthTier.Session) throw SessionErrors.sessionRequired();
      return true;
    }
    if (!isAuthenticated(principal)) {
      if (access.kind === 'public-readable' && principal.scopes.includes(access.scope)) return true;
      throw CommonErrors.authenticationRequired();
    }
    if (!principal.scopes.includes(access.scope)) throw CommonErrors.insufficientScope(access.scope);
    return true;
  }
}
