import {
  type CanActivate,
  type ExecutionContext,
  Injectable,
  type OnApplicationBootstrap,
  SetMetadata,
  type Type,
} from '@nestjs/common';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { ANONYMOUS, isAuthenticated } from 'src/modules/auth/auth.types.js';
import { type EarlyStart, EarlyStartSeam } from 'src/modules/auth/guards/early-start.seam.js';
import { routeHandlers } from 'src/modules/auth/guards/route-handlers.js';

const EARLY_START = 'early_start';

/** Declares the route's early work (see `EarlyStart`), which the application binds (`AuthModule.bind`). */
export const StartsEarly = (type: Type<EarlyStart>) => SetMetadata(EARLY_START, type);

/**
 * A global guard between authentication and the rate limit (GLOBAL_GUARDS): the only point of
 * Nest's pipeline between the two. It refuses nothing. For callers who authenticated (never anonymous
 * ones, nor a request whose credential failed), it starts the route's early work, if the route
 * declares some. The application does not start while a route declares work that is not bound.
 */
@Injectable()
export class EarlyStartGuard implements CanActivate, OnApplicationBootstrap {
  constructor(
    private readonly reflector: Reflector,
    private readonly work: EarlyStartSeam,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onApplicationBootstrap(): void {
    const unbound = routeHandlers(this.discovery, this.scanner, this.reflector).filter(({ handler }) => {
      const type = this.reflector.get<Type<EarlyStart> | undefined>(EARLY_START, handler);
      return type !== undefined && this.work.of(type) === undefined;
    });
    if (unbound.length > 0) {
      throw new Error(
        `Routes whose early work is not bound (AuthModule.bind): ${unbound.map(({ name }) => name).join(', ')}`,
      );
    }
  }

  canActivate(context: ExecutionContext): boolean {
    const type = this.reflector.get<Type<EarlyStart> | undefined>(EARLY_START, context.getHandler());
    if (!type) return true;
    const request = context.switchToHttp().getRequest<Request>();
    if (isAuthenticated(request.principal ?? ANONYMOUS) && !request.authError) {
      this.work.of(type)?.start(request);
    }
    return true;
  }
}
