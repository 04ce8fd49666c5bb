import { applyDecorators, HttpCode, SetMetadata, type Type } from '@nestjs/common';
import { ApiCreatedResponse } from '@nestjs/swagger';

/** The metadata key of a creating route's `Location` template (see `Created`). */
export const LOCATION_TEMPLATE = 'http:location-template';

/**
 * A route that creates an addressable resource: 201, with `Location` the resource's path, `template`
 * with each `{field}` filled from the response body (`/v1/datasets/{id}`). Taken from the body, so that
 * an idempotent replay, which answers the stored body, carries the same Location (`LocationInterceptor`).
 */
export function Created(type: Type, template: string) {
  return applyDecorators(
    HttpCode(201),
    SetMetadata(LOCATION_TEMPLATE, template),
    ApiCreatedResponse({
      type,
      headers: {
        Location: {
          description: `The new resource's path, ${template}`,
          schema: { type: 'string', format: 'uri-reference' },
        },
      },
    }),
  );
}

/** `template` with each `{field}` replaced by that field of `body`, percent-encoded. */
export function fillLocation(template: string, body: unknown): string {
  return template.replace(/\{(\w+)\}/g, (_match, field: string) => {
    const value = (body as Record<string, unknown> | null)?.[field];
    // A route whose body lacks its own id is a mistake of the code, not of the request.
    if (typeof value !== 'string' || value === '') {
      throw new Error(`Location ${template}: the response has no ${field}`);
    }
    return encodeURIComponent(value);
  });
}
