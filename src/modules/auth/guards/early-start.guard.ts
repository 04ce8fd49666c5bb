import { type CanActivate, type ExecutionContext, Injectable, SetMetadata, type Type } from '@nestjs/common';
import { ModuleRef, Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { ANONYMOUS, isAuthenticated } from 'src/modules/auth/auth.types.js';

const EARLY_START = 'early_start';

/**
 * Work a route may begin as soon as its caller is known, while the rate limit is counted, access is
 * checked and the body is validated. It must be work whose loss costs little, since the request may
 * still be refused: `start` leaves it on the request for the handler, and nothing waits for it.
 */
export interface EarlyStart {
  start(request: Request): void;
}

/** Declares the route's early work (see `EarlyStart`); the provider must be visible to the app. */
export const StartsEarly = (type: Type<EarlyStart>) => SetMetadata(EARLY_START, type);

/**
 * A global guard between authentication and the rate limit (GLOBAL_GUARDS): the only point of
 * Nest's pipeline between the two. It refuses nothing. For callers who authenticated (never anonymous ones,
 * nor a request whose credential failed), it starts the route's early work, if the route declares
 * some.
 */
@Injectable()
export class EarlyStartGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly modules: ModuleRef,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const type = this.reflector.get<Type<EarlyStart> | undefined>(EARLY_START, context.getHandler());
    if (!type) return true;
    const request = context.switchToHttp().getRequest<Request>();
    if (isAuthenticated(request.principal ?? ANONYMOUS) && !request.authError) {
      this.modules.get(type, { strict: false }).start(request);
    }
    return true;
  }
}
