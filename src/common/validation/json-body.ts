import { isUtf8 } from 'node:buffer';
import type { RawBodyRequest } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { CommonErrors } from 'src/common/errors/app-error.js';

/** Deeper than any valid request of this API (metadata may nest 5 levels inside a body). */
export const MAX_BODY_DEPTH = 32;

/**
 * More object keys, counted over the whole body, than any valid request holds: metadata, the largest
 * object a request carries, is at most 16 KB of JSON and so fewer than 3,000 keys, and a filter at
 * most 10 fields with their operators. (An evaluation with more judged documents is sent in pages.)
 */
export const MAX_BODY_KEYS = 5_000;

/** True when `value` nests objects or arrays more than `max` levels deep; never recurses past `max`. */
export function deeperThan(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (max === 0) return true;
  return Object.values(value).some((child) => deeperThan(child, max - 1));
}

/**
 * True when the objects in `value` hold more than `max` keys in all; stops counting there. Call it on
 * a value known to be shallow (`deeperThan`): it recurses.
 */
export function holdsMoreKeys(value: unknown, max: number): boolean {
  let left = max;
  const visit = (node: unknown): boolean => {
    if (typeof node !== 'object' || node === null) return false;
    if (!Array.isArray(node)) {
      left -= Object.keys(node).length;
      if (left < 0) return true;
    }
    return Object.values(node).some(visit);
  };
  return visit(value);
}

/**
 * Refuses absurd JSON right after parsing, before anything walks the body (request fingerprints,
 * transformation, validation): nesting deep enough to overflow the stack, and more keys than any
 * request of this API holds, which class-transformer's copy of the body would take time quadratic in
 * (it removes duplicate keys with `indexOf`; docs/decisions.md, Requests and validation).
 * The refusal is raised after the guards, as the body parser's are (see `deferBodyErrors`).
 */
export function rejectAbsurdBodies(request: Request, _response: Response, next: NextFunction): void {
  const issue = deeperThan(request.body, MAX_BODY_DEPTH)
    ? `must not nest more than ${MAX_BODY_DEPTH} levels deep`
    : holdsMoreKeys(request.body, MAX_BODY_KEYS)
      ? `must not hold more than ${MAX_BODY_KEYS} keys in all`
      : null;
  if (issue) {
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
