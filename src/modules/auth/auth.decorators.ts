import { applyDecorators, createParamDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiExtension, ApiOAuth2, ApiSecurity } from '@nestjs/swagger';
import type { Request } from 'express';
import { CommonErrors } from 'src/common/errors/app-error.js';
import {
  type AccountPrincipal,
  ANONYMOUS,
  isAuthenticated,
  type Principal,
  type Scope,
} from 'src/modules/auth/auth.types.js';

/**
 * Every route declares who may call it, with exactly one of these; a route without one is refused to
 * everybody (deny by default, enforced by AccessGuard at boot and per request).
 */
export type RouteAccess =
  // no credentials; counted per client network (`'network'`: signing in, the OAuth endpoints), or not
  // at all (`'none'`: routes that read no database, and probes)
  | { kind: 'public'; limit: PublicLimit }
  | { kind: 'authenticated'; scope: Scope } // a credential of an account
  | { kind: 'public-readable'; scope: Scope } // anyone; the service decides what an anonymous caller may see
  | { kind: 'session' }; // a signed-in person's session cookie, and nothing else

export const ROUTE_ACCESS = 'route_access';

/** Requires a credential that holds `scope`. */
export function Auth(options: { scope: Scope }) {
  return applyDecorators(
    SetMetadata(ROUTE_ACCESS, { kind: 'authenticated', scope: options.scope } satisfies RouteAccess),
    ApiBearerAuth('bearer'),
    ApiOAuth2([options.scope], 'oauth2'),
    ApiCookieAuth('session'),
  );
}

/** Open to anonymous callers too (public datasets); a credential, when sent, must still be valid. */
export function PublicReadable(options: { scope: Scope }) {
  return applyDecorators(
    SetMetadata(ROUTE_ACCESS, { kind: 'public-readable', scope: options.scope } satisfies RouteAccess),
    ApiBearerAuth('bearer'),
    ApiOAuth2([options.scope], 'oauth2'),
    ApiCookieAuth('session'),
    ApiSecurity({}),
  );
}

/** Requires a session (the Session tier): signing out, and asking who is signed in. */
export function SignedIn() {
  return applyDecorators(
    SetMetadata(ROUTE_ACCESS, { kind: 'session' } satisfies RouteAccess),
    ApiCookieAuth('session'),
  );
}

/**
 * How a public route is rate-limited: per client network, in the budget of the sign-in and OAuth
 * endpoints (`RATE_LIMIT_AUTH_ENDPOINTS`), or not at all, which only a route that reads no database
 * may be (metadata, a redirect, a 405), or a probe whose checks are shared between callers (`/ready`).
 */
export type PublicLimit = 'network' | 'none';

/** No credentials needed (none are read); rate-limited per client network unless `limit: 'none'`. */
export function Public(options: { limit?: PublicLimit } = {}) {
  return applyDecorators(
    SetMetadata(ROUTE_ACCESS, { kind: 'public', limit: options.limit ?? 'network' } satisfies RouteAccess),
    ApiExtension(PUBLIC_ROUTE_EXTENSION, true),
  );
}

/** Marks a public route's operation until the OpenAPI document is built, which gives it `security: []`. */
export const PUBLIC_ROUTE_EXTENSION = 'x-public-route';

/** The caller of the current request. */
export const CurrentPrincipal = createParamDecorator(
  (_data: unknown, context: ExecutionContext): Principal =>
    context.switchToHttp().getRequest<Request>().principal ?? ANONYMOUS,
);

/** The account behind the current request, on routes declared with `@Auth`. */
export const CurrentAccount = createParamDecorator(
  (_data: unknown, context: ExecutionContext): AccountPrincipal => {
    const principal = context.switchToHttp().getRequest<Request>().principal ?? ANONYMOUS;
    if (!isAuthenticated(principal)) throw CommonErrors.authenticationRequired();
    return principal;
  },
);
