import type { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { AppError, CommonErrors } from 'src/common/errors/app-error.js';
import { AccessGuard } from 'src/modules/auth/guards/access.guard.js';
import { Auth, Public, PublicReadable } from 'src/modules/auth/auth.decorators.js';
import { ANONYMOUS, AuthTier, type Principal } from 'src/modules/auth/auth.types.js';
import { strictMock } from '../../../../test/utils/strict-mock.js';

class Routes {
  @Auth({ scope: 'datasets:write' })
  write() {}

  @PublicReadable({ scope: 'datasets:read' })
  read() {}

  @Public()
  health() {}

  undeclared() {}
}

const guard = new AccessGuard(
  new Reflector(),
  strictMock<DiscoveryService>({}),
  strictMock<MetadataScanner>({}),
);

function context(handler: keyof Routes, principal: Principal, authError?: AppError): ExecutionContext {
  const request = { principal, authError };
  return strictMock<ExecutionContext>({
    getHandler: () => Routes.prototype[handler],
    switchToHttp: () => ({ getRequest: () => request }) as ReturnType<ExecutionContext['switchToHttp']>,
  });
}

const apiKey = (scopes: Principal['scopes']): Principal => ({
  tier: AuthTier.ApiKey,
  accountId: 'acc_1',
  credentialId: 'key_1',
  scopes,
  userId: null,
  datasetIds: null,
  audience: null,
});

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return error.code;
    throw error;
  }
  return undefined;
}

describe('AccessGuard', () => {
  it('lets an account credential with the scope through', () => {
    expect(guard.canActivate(context('write', apiKey(['datasets:write'])))).toBe(true);
  });

  it('answers 403 insufficient_scope for a credential without the scope', () => {
    expect(codeOf(() => guard.canActivate(context('write', apiKey(['datasets:read']))))).toBe(
      'insufficient_scope',
    );
  });

  it('answers 401 authentication_required to anonymous callers of an authenticated route', () => {
    expect(codeOf(() => guard.canActivate(context('write', ANONYMOUS)))).toBe('authentication_required');
  });

  it('lets anonymous callers read public-readable routes', () => {
    expect(guard.canActivate(context('read', ANONYMOUS))).toBe(true);
  });

  it('reports a failed credential even on a public-readable route', () => {
    const run = () => guard.canActivate(context('read', ANONYMOUS, CommonErrors.invalidApiKey()));
    expect(codeOf(run)).toBe('invalid_api_key');
  });

  it('opens public routes to everybody', () => {
    expect(guard.canActivate(context('health', ANONYMOUS, CommonErrors.invalidApiKey()))).toBe(true);
  });

  it('refuses a route that declares no access rule', () => {
    expect(codeOf(() => guard.canActivate(context('undeclared', apiKey(['datasets:write']))))).toBe(
      'forbidden',
    );
  });
});
