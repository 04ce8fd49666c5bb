import { isUtf8 } from 'node:buffer';
import type { RawBodyRequest } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { CommonErrors } from 'src/common/errors/app-error.js';

/** Deeper than any valid request of this API (metadata may nest 5 levels inside a body). */
export const MAX_BODY_DEPTH = 32;

/** True when `value` nests objects or arrays more than `max` levels deep; never recurses past `max`. */
export function deeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (max === 0) return true;
  return Object.values(value).some((child) => deeperThan(child, max - 1));
}

/**
 * Refuses absurdly nested JSON right after parsing, before anything recurses through the body
 * (request fingerprints, transformation, validation) and could overflow the stack. The refusal is
 * raised after the guards, as the body parser's are (see `deferBodyErrors`).
 */
export function rejectDeepBodies(request: Request, _response: Response, next: NextFunction): void {
  if (deeperThan(request.body, MAX_BODY_DEPTH)) {
    const issue = `must not nest more than ${MAX_BODY_DEPTH} levels deep`;
    request.body = undefined;
    request.bodyError = CommonErrors.validation([{ field: 'body', issue }]);
  }
  next();
}

/** A charset other than UTF-8 named by the Content-Type (body-parser decodes UTF-16 and the like). */
const OTHER_CHARSET = /;\s*charset\s*=\s*"?(?!utf-?8\b)[^";\s]+/i;

/**
 * Refuses a JSON body declared UTF-8 (or with no charset, as JSON is) whose bytes are not UTF-8. The
 * parser decodes bytes that encode no character as U+FFFD, so a name or a document sent in Latin-1 was
 * stored altered, with 201. Reads the raw bytes Nest keeps (`rawBody`), and lets them go.
 */
export function refuseMalformedUtf8(
  request: RawBodyRequest<Request>,
  _response: Response,
  next: NextFunction,
): void {
  const raw = request.rawBody;
  request.rawBody = undefined;
  const declaredUtf8 = !OTHER_CHARSET.test(request.headers['content-type'] ?? '');
  if (raw && request.body !== undefined && declaredUtf8 && !isUtf8(raw)) {
    request.body = undefined;
    request.bodyError = CommonErrors.invalidJson('is not valid UTF-8');
  }
  next();
}
