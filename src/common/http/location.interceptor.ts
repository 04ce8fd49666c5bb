import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Response } from 'express';
import { map, type Observable } from 'rxjs';
import { fillLocation, LOCATION_TEMPLATE } from 'src/common/http/created.decorator.js';

/**
 * Sets `Location` on the answers of the routes declared `@Created`. Global, so that it wraps the
 * routes' own interceptors and also sees the body an idempotent replay answers with.
 */
@Injectable()
export class LocationInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const template = this.reflector.get<string | undefined>(LOCATION_TEMPLATE, context.getHandler());
    if (template === undefined) return next.handle();
    const response = context.switchToHttp().getResponse<Response>();
    return next.handle().pipe(
      map((body: unknown) => {
        response.setHeader('Location', fillLocation(template, body));
        return body;
      }),
    );
  }
}
