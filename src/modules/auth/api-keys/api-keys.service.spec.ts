import { createHash } from 'node:crypto';
import { jest } from '@jest/globals';
import { pino } from 'pino';
import { AppError } from 'src/common/errors/app-error.js';
import type { AccountsRepository } from 'src/modules/auth/accounts/accounts.repository.js';
import type { ApiKeyEntity } from 'src/modules/auth/api-keys/api-key.entity.js';
import { ApiKeyCache } from 'src/modules/auth/api-keys/api-key-cache.js';
import type { ApiKeysRepository } from 'src/modules/auth/api-keys/api-keys.repository.js';
import { ApiKeysService } from 'src/modules/auth/api-keys/api-keys.service.js';
import { AuthTier } from 'src/modules/auth/auth.types.js';
import { strictMock } from '../../../../test/utils/strict-mock.js';

const ID = 'AbCdEfGhIjKlMnOpQrStUv';
const SECRET = 'S'.repeat(32);
const TOKEN = `svc_sk_${ID}_${SECRET}`;

function storedKey(overrides: Partial<ApiKeyEntity> = {}): ApiKeyEntity {
  return {
    id: `key_${ID}`,
    accountId: 'acc_1',
    secretHash: createHash('sha256').update(SECRET).digest(),
    createdAt: new Date(),
    lastUsedAt: new Date(),
    revokedAt: null,
    ...overrides,
  };
}

function serviceWith(key: ApiKeyEntity | null) {
  const findKeyById = jest.fn((_id: string) => Promise.resolve(key));
  const touchLastUsed = jest.fn((_id: string) => Promise.resolve());
  const repository = strictMock<ApiKeysRepository>({ findKeyById, touchLastUsed }, 'ApiKeysRepository');
  const logger = pino({ level: 'silent' });
  // Keeping keys in memory (off here) is tested against the database, in test/api-key-cache.e2e-spec.ts.
  const cache = new ApiKeyCache({ cacheSeconds: 0 }, { url: '' }, logger);
  return {
    service: new ApiKeysService(
      strictMock<AccountsRepository>({}, 'AccountsRepository'),
      repository,
      cache,
      logger,
    ),
    findKeyById,
    touchLastUsed,
  };
}

async function rejection(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof AppError)) throw new Error('expected an AppError');
  return error;
}

describe('ApiKeysService.verify', () => {
  it('resolves a valid key to an API-key principal of its account with every scope', async () => {
    const { service, findKeyById } = serviceWith(storedKey());
    await expect(service.verify(TOKEN)).resolves.toEqual({
      tier: AuthTier.ApiKey,
      accountId: 'acc_1',
      credentialId: `key_${ID}`,
      scopes: expect.arrayContaining(['datasets:read', 'datasets:write', 'search']),
      userId: null,
      datasetIds: null,
      audience: null,
    });
    expect(findKeyById).toHaveBeenCalledWith(`key_${ID}`);
  });

  it.each([
    ['a malformed token', 'svc_sk_nope'],
    ['a secret of the wrong length', `svc_sk_${ID}_short`],
  ])('refuses %s without a database lookup', async (_case, token) => {
    const { service, findKeyById } = serviceWith(storedKey());
    expect((await rejection(service.verify(token))).code).toBe('invalid_api_key');
    expect(findKeyById).not.toHaveBeenCalled();
  });

  it('refuses a wrong secret, an unknown key and a revoked key alike', async () => {
    const wrongSecret = serviceWith(storedKey()).service.verify(`svc_sk_${ID}_${'x'.repeat(32)}`);
    const unknown = serviceWith(null).service.verify(TOKEN);
    const revoked = serviceWith(storedKey({ revokedAt: new Date() })).service.verify(TOKEN);
    for (const attempt of [wrongSecret, unknown, revoked]) {
      expect(await rejection(attempt)).toMatchObject({ status: 401, code: 'invalid_api_key' });
    }
  });

  it('records the use of a key only when the last record is over a minute old', async () => {
    const recent = serviceWith(storedKey({ lastUsedAt: new Date(Date.now() - 10_000) }));
    await recent.service.verify(TOKEN);
    expect(recent.touchLastUsed).not.toHaveBeenCalled();

    const stale = serviceWith(storedKey({ lastUsedAt: new Date(Date.now() - 120_000) }));
    await stale.service.verify(TOKEN);
    expect(stale.touchLastUsed).toHaveBeenCalledWith(`key_${ID}`);

    const never = serviceWith(storedKey({ lastUsedAt: null }));
    await never.service.verify(TOKEN);
    expect(never.touchLastUsed).toHaveBeenCalledTimes(1);
  });

  it('still authenticates when recording the use fails', async () => {
    const { service, touchLastUsed } = serviceWith(storedKey({ lastUsedAt: null }));
    touchLastUsed.mockRejectedValueOnce(new Error('database busy'));
    await expect(service.verify(TOKEN)).resolves.toMatchObject({ accountId: 'acc_1' });
  });
});
