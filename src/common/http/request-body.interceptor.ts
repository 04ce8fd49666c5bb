import { STATUS_CODES } from 'node:http';
import {
  type CallHandler,
  type ExecutionContext,
  HttpException,
  Injectable,
  type NestInterceptor,
  SetMetadata,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { NextFunction, Request, Response } from 'express';
import type { Observable } from 'rxjs';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { isEmptyObject } from 'src/common/validation/metadata.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Why the body was refused, raised by `RequestBodyInterceptor` (see `deferBodyErrors`). */
      bodyError?: Error;
    }
  }
}

const ACCEPTS = 'accepts_content_types';
const DEFAULT_TYPES = ['application/json'] as const;
const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/** The media types a route takes as its body; JSON when a route does not say. */
export const Accepts = (...types: string[]) => SetMetadata(ACCEPTS, types);

const ANSWERS_BODY_ERRORS = 'answers_body_errors';

/**
 * The route answers what is wrong with its body itself, in a protocol of its own (the MCP endpoint
 * answers JSON-RPC errors): `request.bodyError` and the media type are left to it.
 */
export const AnswersBodyErrors = () => SetMetadata(ANSWERS_BODY_ERRORS, true);

function hasBody(request: Request): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * What is wrong with a request's body, raised after the guards: 415 unsupported_media_type for a body
 * that is not of the route's type (without it a text/plain body would be silently ignored by the JSON
 * parser and validated as if it were empty), then the body parser's own refusal (`deferBodyErrors`),
 * then 400 for a body sent with a method that takes none.
 */
@Injectable()
export class RequestBodyInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    if (this.reflector.get<boolean | undefined>(ANSWERS_BODY_ERRORS, context.getHandler())) {
      return next.handle();
    }
    if (METHODS_WITH_BODY.has(request.method) && hasBody(request)) {
      const allowed = this.reflector.get<string[] | undefined>(ACCEPTS, context.getHandler()) ?? [
        ...DEFAULT_TYPES,
      ];
      const received = request.headers['content-type'];
      const mediaType = received?.split(';')[0].trim().toLowerCase();
      if (!mediaType || !allowed.includes(mediaType))
        throw CommonErrors.unsupportedMediaType(received, allowed);
    }
    if (request.bodyError) throw request.bodyError;
    if (!METHODS_WITH_BODY.has(request.method) && hasBody(request) && !isEmptyObject(request.body)) {
      // A GET or DELETE takes nothing in its body, and what a client sends is never dropped unseen: a
      // DELETE with `{"dry_run": true}` would have deleted.
      throw CommonErrors.validation([
        { field: 'body', issue: `must be empty: ${request.method} takes no body` },
      ]);
    }
    return next.handle();
  }
}

/** An error of Express's body parser (an http-errors one): a client's fault, with a status below 500. */
function isBodyParserError(error: unknown): error is Error & { statusCode: number; expose: boolean } {
  const { statusCode, expose } = (error ?? {}) as { statusCode?: unknown; expose?: unknown };
  return typeof statusCode === 'number' && statusCode < 500 && typeof expose === 'boolean';
}

/**
 * Error middleware right after the body parsers. A body that is malformed, too large or cannot be
 * decoded does not end the request here: its error is kept on the request, which goes on without a
 * body through authentication and the rate limit like any other, so that it is counted and its error
 * response carries the `X-RateLimit-*` headers; `RequestBodyInterceptor` then raises it. The error is
 * wrapped as Nest wraps a middleware's, so the exception filter maps it as before. Other errors pass.
 */
export function deferBodyErrors(error: unknown, request: Request, _response: Response, next: NextFunction) {
  if (!isBodyParserError(error)) return next(error);
  request.body = undefined;
  const message = error.expose ? error.message : (STATUS_CODES[error.statusCode] ?? 'Bad Request');
  request.bodyError = new HttpException(message, error.statusCode, { cause: error });
  next();
}

/**
 * A request that carried no body reaches its route with an empty object, as one with an empty form
 * does, so that no route reads a field of `undefined`. A body no parser read stays absent, for
 * `RequestBodyInterceptor` to refuse (or multer to read), and so does a refused one.
 */
export function defaultToEmptyBody(request: Request, _response: Response, next: NextFunction): void {
  if (request.body === undefined && !request.bodyError && !hasBody(request)) request.body = {};
  next();
}
