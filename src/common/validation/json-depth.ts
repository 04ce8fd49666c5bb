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
