import { timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { newId, randomBase62 } from 'src/common/ids/ids.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { AccountsRepository } from 'src/modules/auth/accounts/accounts.repository.js';
import { ApiKeyCache, type KnownKey } from 'src/modules/auth/api-keys/api-key-cache.js';
import { ApiKeysRepository } from 'src/modules/auth/api-keys/api-keys.repository.js';
import { ApiKeyErrors } from 'src/modules/auth/api-keys/api-keys.errors.js';
import { sha256 } from 'src/modules/auth/secrets.js';
import { AuthTier, type Principal, SCOPES, type TokenVerifier } from 'src/modules/auth/auth.types.js';

export const API_KEY_PREFIX = 'svc_sk_';

/** `last_used_at` is written at most this often per key, so that reads do not turn into writes. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * `svc_sk_<key id>_<secret>`: the key id (the part after `key_`) finds the row with one indexed lookup,
 * and the secret, 190 random bits, is checked against its stored SHA-256 in constant time.
 */
const API_KEY_PATTERN = /^svc_sk_([0-9A-Za-z]{22})_([0-9A-Za-z]{32})$/;

export interface CreatedApiKey {
  account_id: string;
  key_id: string;
  api_key: string;
}

export interface ApiKeySummary {
  key_id: string;
  account_id: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

@Injectable()
export class ApiKeysService implements TokenVerifier {
  readonly prefix = API_KEY_PREFIX;

  constructor(
    private readonly accounts: AccountsRepository,
    private readonly repository: ApiKeysRepository,
    private readonly cache: ApiKeyCache,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Creates the account when needed and a new key for it; the key is returned once and never stored. */
  async create(accountName: string): Promise<CreatedApiKey> {
    const account = await this.accounts.findOrCreate(accountName);
    const id = newId('key');
    const secret = randomBase62(32);
    await this.repository.insertKey({ id, accountId: account.id, secretHash: sha256(secret) });
    return {
      account_id: account.id,
      key_id: id,
      api_key: `${API_KEY_PREFIX}${id.slice('key_'.length)}_${secret}`,
    };
  }

  async revoke(keyId: string): Promise<void> {
    if (!(await this.repository.revokeKey(keyId))) throw ApiKeyErrors.notFound(keyId);
    this.cache.forget(keyId);
  }

  async list(accountName: string): Promise<ApiKeySummary[]> {
    const account = await this.accounts.get(accountName);
    const keys = await this.repository.listKeysForAccount(account.id);
    return keys.map((key) => ({
      key_id: key.id,
      account_id: key.accountId,
      created_at: key.createdAt.toISOString(),
      last_used_at: key.lastUsedAt?.toISOString() ?? null,
      revoked_at: key.revokedAt?.toISOString() ?? null,
    }));
  }

  /** Resolves a bearer API key to its account; any failure is the same 401 invalid_api_key. */
  async verify(token: string): Promise<Principal> {
    const match = API_KEY_PATTERN.exec(token);
    if (!match) throw CommonErrors.invalidApiKey();
    const id = `key_${match[1]}`;
    const key = await this.knownKey(id, sha256(match[2]));
    if (!key) throw CommonErrors.invalidApiKey();

    if (isStale(key.lastUsedAt)) await this.recordUse(id);
    return {
      tier: AuthTier.ApiKey,
      accountId: key.accountId,
      credentialId: id,
      scopes: SCOPES,
      userId: null,
      datasetIds: null,
      audience: null,
    };
  }

  /** The key when `presented` is the hash of its secret and it is not revoked; else null. */
  private async knownKey(id: string, presented: Buffer): Promise<KnownKey | null> {
    const cached = this.cache.get(id);
    if (cached) return timingSafeEqual(presented, cached.secretHash) ? cached : null;
    const epoch = this.cache.begin();
    const key = await this.repository.findKeyById(id);
    // Compared even when the key is unknown, so that timing does not tell which key ids exist.
    const stored = key?.secretHash ?? Buffer.alloc(presented.length);
    if (!key || key.revokedAt !== null || !timingSafeEqual(presented, stored)) return null;
    this.cache.remember(id, key, epoch);
    return key;
  }

  /** A failure to record the use of a key must not fail the request it authenticated. */
  private async recordUse(keyId: string): Promise<void> {
    try {
      await this.repository.touchLastUsed(keyId);
      this.cache.touch(keyId, new Date());
    } catch (err) {
      this.logger.warn({ err, key_id: keyId }, 'could not record last_used_at');
    }
  }
}

function isStale(lastUsedAt: Date | null): boolean {
  return lastUsedAt === null || Date.now() - lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS;
}
