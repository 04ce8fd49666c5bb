import type { ExecutionContext } from '@nestjs/common';
import { ModuleRef, Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { ANONYMOUS, AuthTier, type Principal } from 'src/modules/auth/auth.types.js';
import { type EarlyStart, EarlyStartGuard, StartsEarly } from 'src/modules/auth/guards/early-start.guard.js';
import { strictMock } from '../../../../test/utils/strict-mock.js';

const started: Request[] = [];

class RecordsStart implements EarlyStart {
  start(request: Request): void {
    started.push(request);
  }
}

class Routes {
  @StartsEarly(RecordsStart)
  search() {}

  plain() {}
}

const guard = new EarlyStartGuard(
  new Reflector(),
  strictMock<ModuleRef>({ get: (() => new RecordsStart()) as unknown as ModuleRef['get'] }),
);

function run(handler: keyof Routes, principal: Principal, failed = false): boolean {
  const request = { principal, authError: failed ? CommonErrors.invalidApiKey() : undefined };
  return guard.canActivate(
    strictMock<ExecutionContext>({
      getHandler: () => Routes.prototype[handler],
      switchToHttp: () => ({ getRequest: () => request }) as ReturnType<ExecutionContext['switchToHttp']>,
    }),
  );
}

const apiKey: Principal = {
  tier: AuthTier.ApiKey,
  accountId: 'acc_1',
  credentialId: 'key_1',
  scopes: [],
  userId: null,
  datasetIds: null,
  audience: null,
};

describe('EarlyStartGuard', () => {
  beforeEach(() => (started.length = 0));

  it("starts a route's early work for a caller who authenticated", () => {
    expect(run('search', apiKey)).toBe(true);
    expect(started).toHaveLength(1);
  });

  it('starts nothing for an anonymous caller, a failed credential or a route without early work, and refuses nobody', () => {
    expect(run('search', ANONYMOUS)).toBe(true);
    expect(run('search', apiKey, true)).toBe(true);
    expect(run('plain', apiKey)).toBe(true);
    expect(started).toHaveLength(0);
  });
});
