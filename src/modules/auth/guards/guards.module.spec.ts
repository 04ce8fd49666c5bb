import type { ExecutionContext, Provider, Type } from '@nestjs/common';
import { APP_GUARD, type DiscoveryService, type MetadataScanner, Reflector } from '@nestjs/core';
import type { ThrottlerStorage } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { AppError, CommonErrors } from 'src/common/errors/app-error.js';
import type { CoreConfig } from 'src/config/core.config.js';
import type { RateLimits } from 'src/modules/auth/rate-limits/rate-limits.config.js';
import type { SessionsConfig } from 'src/modules/auth/sessions/sessions.config.js';
import { Auth } from 'src/modules/auth/auth.decorators.js';
import { AuthTier, type Principal, type Scope, type TokenVerifier } from 'src/modules/auth/auth.types.js';
import { AccessGuard } from 'src/modules/auth/guards/access.guard.js';
import { AuthenticationGuard } from 'src/modules/auth/guards/authentication.guard.js';
import { BearerStrategy } from 'src/modules/auth/guards/bearer.strategy.js';
import { EarlyStartGuard, StartsEarly } from 'src/modules/auth/guards/early-start.guard.js';
import { type EarlyStart, EarlyStartSeam } from 'src/modules/auth/guards/early-start.seam.js';
import type { SessionsService } from 'src/modules/auth/sessions/sessions.service.js';
import { strictMock } from '../../../../test/utils/strict-mock.js';

// @nestjs/throttler is CommonJS, which Jest's ESM runtime loads only once @nestjs/common and
// @nestjs/core have run: the modules that import it come after the static imports.
const { GLOBAL_GUARDS, GuardsModule } = await import('src/modules/auth/guards/guards.module.js');
const { RateLimitGuard } = await import('src/modules/auth/rate-limits/rate-limit.guard.js');
const { rateLimitOptions } = await import('src/modules/auth/rate-limits/rate-limits.module.js');

/** What the guards did, in the order they did it. */
const log: string[] = [];

const GOOD_KEY = `svc_sk_${'a'.repeat(22)}_${'b'.repeat(32)}`;
const ADDRESS = '203.0.113.7';

class RecordsStart implements EarlyStart {
  start(request: Request): void {
    log.push(`start for ${request.principal?.credentialId ?? 'nobody'}`);
  }
}

class Routes {
  @Auth({ scope: 'search' })
  @StartsEarly(RecordsStart)
  search() {}
}

const limits: RateLimits = {
  anonymous: 50,
  apiKey: 1_000,
  oauth: 15_000,
  session: 15_000,
  windowSeconds: 3_600,
  authEndpoints: 60,
  authEndpointsWindowSeconds: 60,
};

/** The four guards as the app builds them, the API key verifier and the rate-limit store mocked. */
async function guards(options: { scopes: Scope[]; overBudget?: boolean }) {
  const reflector = new Reflector();
  const apiKeys: TokenVerifier = {
    prefix: 'svc_sk_',
    verify: (token) => {
      log.push('verify');
      if (token !== GOOD_KEY) return Promise.reject(CommonErrors.invalidApiKey());
      const principal: Principal = {
        tier: AuthTier.ApiKey,
        accountId: 'acc_1',
        credentialId: 'key_1',
        scopes: options.scopes,
        userId: null,
        datasetIds: null,
        audience: null,
      };
      return Promise.resolve(principal);
    },
  };
  // Registers passport's `bearer` strategy, which AuthenticationGuard authenticates with.
  new BearerStrategy([apiKeys]);
  const storage = strictMock<ThrottlerStorage>(
    {
      increment: (key) => {
        log.push(`count ${key}`);
        const totalHits = options.overBudget ? limits.apiKey + 1 : 1;
        return Promise.resolve({
          totalHits,
          timeToExpire: 60,
          isBlocked: !!options.overBudget,
          timeToBlockExpire: 60,
        });
      },
    },
    'ThrottlerStorage',
  );
  const rateLimit = new RateLimitGuard(rateLimitOptions(limits, storage), storage, reflector);
  await rateLimit.onModuleInit();
  const earlyStarts = new EarlyStartSeam();
  earlyStarts.bind(RecordsStart, new RecordsStart());
  const instances = new Map<Type, { canActivate(context: ExecutionContext): boolean | Promise<boolean> }>([
    [
      AuthenticationGuard,
      new AuthenticationGuard(
        reflector,
        strictMock<SessionsService>({}),
        { publicBaseUrl: null } as CoreConfig,
        {
          secureCookie: true,
        } as SessionsConfig,
      ),
    ],
    [
      EarlyStartGuard,
      new EarlyStartGuard(
        reflector,
        earlyStarts,
        strictMock<DiscoveryService>({}),
        strictMock<MetadataScanner>({}),
      ),
    ],
    [RateLimitGuard, rateLimit],
    [
      AccessGuard,
      new AccessGuard(reflector, strictMock<DiscoveryService>({}), strictMock<MetadataScanner>({})),
    ],
  ]);
  return GLOBAL_GUARDS.map((type) => instances.get(type)!);
}

/** Runs the guards in GLOBAL_GUARDS' order on a request with this API key; the error that ends it, if any. */
async function request(apiKey: string, options: { scopes: Scope[]; overBudget?: boolean }) {
  const request = {
    headers: { authorization: `Bearer ${apiKey}` },
    rawHeaders: ['Authorization', `Bearer ${apiKey}`],
    ip: ADDRESS,
  } as unknown as Request;
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: string) => (headers[name] = value),
  } as unknown as Response;
  const context = strictMock<ExecutionContext>({
    getType: (() => 'http') as ExecutionContext['getType'],
    getHandler: () => Routes.prototype.search,
    getClass: (() => Routes) as ExecutionContext['getClass'],
    switchToHttp: () =>
      ({ getRequest: () => request, getResponse: () => response }) as ReturnType<
        ExecutionContext['switchToHttp']
      >,
  });
  try {
    for (const guard of await guards(options)) await guard.canActivate(context);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return { error: error.code, headers };
  }
  return { error: null, headers };
}

describe('the global guards', () => {
  beforeEach(() => (log.length = 0));

  it('are the APP_GUARDs of GuardsModule, in the order GLOBAL_GUARDS gives', () => {
    const providers = (Reflect.getMetadata('providers', GuardsModule) as Provider[]).filter(
      (provider) => typeof provider === 'object' && provider.provide === APP_GUARD,
    );
    expect(providers.map((provider) => (provider as { useExisting: Type }).useExisting)).toEqual([
      ...GLOBAL_GUARDS,
    ]);
  });

  it("start a route's early work once the caller is known, then count the request against the caller's budget", async () => {
    expect(await request(GOOD_KEY, { scopes: ['search'] })).toEqual({
      error: null,
      headers: expect.objectContaining({ 'X-RateLimit-Limit': '1000' }) as unknown,
    });
    expect(log).toEqual(['verify', 'start for key_1', 'count rl:hourly:api_key:key_1']);
  });

  it("count a request whose credential failed against its address's budget, then refuse it", async () => {
    expect(await request(`svc_sk_${'x'.repeat(22)}_${'y'.repeat(32)}`, { scopes: [] })).toEqual({
      error: 'invalid_api_key',
      headers: expect.objectContaining({ 'X-RateLimit-Limit': '50' }) as unknown,
    });
    expect(log).toEqual(['verify', `count rl:hourly:ip:${ADDRESS}`]);
  });

  it('answer a caller over its budget with 429 before checking its scope', async () => {
    const { error } = await request(GOOD_KEY, { scopes: [], overBudget: true });
    expect(error).toBe('rate_limit_exceeded');
  });
});
