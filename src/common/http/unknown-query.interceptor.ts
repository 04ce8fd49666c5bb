import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { CommonErrors } from 'src/common/errors/app-error.js';

/**
 * 400 validation_error for query parameters sent to an API route (`/v1/...`) that takes none. Routes
 * that take some declare a DTO for them, which refuses unknown ones (`AppValidationPipe`); without
 * this, the rest would ignore them, and `DELETE ...?force=true` would look as if it had been
 * understood. Probes (`/health`, `/ready`) are left alone: monitors add cache-busting parameters.
 */
@Injectable()
export class UnknownQueryInterceptor implements NestInterceptor {
  private readonly takesQuery = new WeakMap<object, boolean>();

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    const names = Object.keys(request.query);
    if (names.length > 0 && request.path.startsWith('/v1/') && !this.routeTakesQuery(context)) {
      throw CommonErrors.validation(names.map((field) => ({ field, issue: 'is not a known field' })));
    }
    return next.handle();
  }

  private routeTakesQuery(context: ExecutionContext): boolean {
    const handler = context.getHandler();
    let takes = this.takesQuery.get(handler);
    if (takes === undefined) {
      const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, context.getClass(), handler.name) ??
        {}) as object;
      takes = Object.keys(args).some((key) => key.startsWith(`${RouteParamtypes.QUERY}:`));
      this.takesQuery.set(handler, takes);
    }
    return takes;
  }
}
