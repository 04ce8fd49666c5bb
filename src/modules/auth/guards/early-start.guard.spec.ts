import { Controller, type ExecutionContext, Get } from '@nestjs/common';
import { type DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { ANONYMOUS, AuthTier, type Principal } from 'src/modules/auth/auth.types.js';
import { EarlyStartGuard, StartsEarly } from 'src/modules/auth/guards/early-start.guard.js';
import { type EarlyStart, EarlyStartSeam } from 'src/modules/auth/guards/early-start.seam.js';
import { strictMock } from '../../../../test/utils/strict-mock.js';

const started: Request[] = [];

class RecordsStart implements EarlyStart {
  start(request: Request): void {
    started.push(request);
  }
}

@Controller('routes')
class Routes {
  @Get('search')
  @StartsEarly(RecordsStart)
  search() {}

  @Get('plain')
  plain() {}
}

/** The guard over the controller `Routes`, with the early work the application bound. */
function guardWith(bound: Partial<Record<'RecordsStart', EarlyStart>>): EarlyStartGuard {
  const seam = new EarlyStartSeam();
  if (bound.RecordsStart) seam.bind(RecordsStart, bound.RecordsStart);
  const discovery = strictMock<DiscoveryService>({
    getControllers: (() => [
      { name: 'Routes', instance: new Routes() },
    ]) as DiscoveryService['getControllers'],
  });
  return new EarlyStartGuard(new Reflector(), seam, discovery, new MetadataScanner());
}

const guard = guardWith({ RecordsStart: new RecordsStart() });

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

  it('lets the application start when the early work of every route is bound', () => {
    expect(() => guard.onApplicationBootstrap()).not.toThrow();
  });

  it('stops the application from starting, naming the route, when a route declares early work that is not bound', () => {
    expect(() => guardWith({}).onApplicationBootstrap()).toThrow(
      'Routes whose early work is not bound (AuthModule.bind): Routes.search',
    );
  });
});
