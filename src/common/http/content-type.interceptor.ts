import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
  SetMetadata,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { CommonErrors } from 'src/common/errors/app-error.js';

const ACCEPTS = 'accepts_content_types';
const DEFAULT_TYPES = ['application/json'] as const;
const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/** The media types a route takes as its body; JSON when a route does not say. */
export const Accepts = (...types: string[]) => SetMetadata(ACCEPTS, types);

function hasBody(request: Request): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * 415 unsupported_media_type for a body that is not of the route's type. Without it a text/plain body
 * would be silently ignored by the JSON parser and validated as if it were empty.
 */
@Injectable()
export class ContentTypeInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    if (METHODS_WITH_BODY.has(request.method) && hasBody(request)) {
      const allowed = this.reflector.get<string[] | undefined>(ACCEPTS, context.getHandler()) ?? [
        ...DEFAULT_TYPES,
      ];
      const received = request.headers['content-type'];
      const mediaType = received?.split(';')[0].trim().toLowerCase();
      if (!mediaType || !allowed.includes(mediaType))
        throw CommonErrors.unsupportedMediaType(received, allowed);
    }
    return next.handle();
  }
}
