import { createHash } from 'node:crypto';
import { AppError } from 'src/common/errors/app-error.js';
import type { TransactionRunner, Tx } from 'src/database/transaction.js';
import { AuthTier } from 'src/modules/auth/auth.types.js';
import type { OAuthClient } from 'src/modules/auth/oauth/clients/clients.repository.js';
import type {
  Grant,
  GrantsRepository,
  NewToken,
  TokenKind,
  TokenRecord,
} from 'src/modules/auth/oauth/grants/grants.repository.js';
import { OAuthProtocolError } from 'src/modules/auth/oauth/oauth.errors.js';
import { TokensService } from 'src/modules/auth/oauth/tokens.service.js';
import { strictMock } from '../../../../test/utils/strict-mock.js';

const ID = 'AbCdEfGhIjKlMnOpQrStUv';
const SECRET = 'S'.repeat(32);
const ACCESS_TOKEN = `svc_at_${ID}_${SECRET}`;
const REFRESH_TOKEN = `svc_rt_${ID}_${SECRET}`;
// RFC 7636, appendix B.
const VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
const HOUR = 3_600_000;

const sha256 = (text: string) => createHash('sha256').update(text).digest();

function clientOf(id: string, grantTypes: ('authorization_code' | 'refresh_token')[]): OAuthClient {
  const redirectUris = ['http://127.0.0.1:8976/callback'];
  return {
    id,
    secretHash: null,
    authMethod: 'none',
    name: null,
    redirectUris,
    metadata: {
      redirect_uris: redirectUris,
      token_endpoint_auth_method: 'none',
      grant_types: grantTypes,
      response_types: ['code'],
    },
    createdAt: new Date(),
  };
}

const CLIENT = clientOf('cli_1', ['authorization_code', 'refresh_token']);

function grantOf(overrides: Partial<Grant> = {}): Grant {
  return {
    id: 'grt_1',
    clientId: CLIENT.id,
    userId: 'usr_1',
    accountId: 'acc_1',
    scopes: ['search', 'datasets:read'],
    resource: 'https://search.example.com/v1',
    datasetIds: ['ds_1'],
    codeChallenge: CHALLENGE,
    redirectUri: CLIENT.redirectUris[0],
    codeExpiresAt: new Date(Date.now() + 60_000),
    codeUsedAt: null,
    revokedAt: null,
    ...overrides,
  };
}

function tokenOf(kind: TokenKind, overrides: Partial<TokenRecord> = {}): TokenRecord {
  return {
    id: `tok_${ID}`,
    kind,
    secretHash: sha256(SECRET),
    scopes: ['search', 'datasets:read'],
    expiresAt: new Date(Date.now() + HOUR),
    usedAt: null,
    revokedAt: null,
    grant: grantOf(),
    userRole: 'member',
    orphaned: false,
    ...overrides,
  };
}

/** The service over a strictly mocked repository that holds `members`; every call to it is logged. */
function serviceWith(members: Partial<GrantsRepository> = {}) {
  const calls: unknown[][] = [];
  const tx = strictMock<Tx>({}, 'Tx');
  const logged = Object.fromEntries(
    Object.entries(members).map(([name, member]) => [
      name,
      (...args: unknown[]) => {
        calls.push([name, ...args.map((arg) => (arg === tx ? 'tx' : arg))]);
        return (member as (...a: unknown[]) => unknown)(...args);
      },
    ]),
  ) as Partial<GrantsRepository>;
  const transactions = strictMock<TransactionRunner>(
    { run: ((work: (tx: Tx) => Promise<unknown>) => work(tx)) as TransactionRunner['run'] },
    'TransactionRunner',
  );
  return { service: new TokensService(strictMock(logged, 'GrantsRepository'), transactions), calls };
}

/** The code of the AppError or the OAuth error `promise` is rejected with. */
async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AppError) return error.code;
    if (error instanceof OAuthProtocolError) return error.error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('TokensService.verify', () => {
  it("resolves an access token to its person at its client, with the granted scopes their role still holds, the grant's datasets and resource", async () => {
    const record = tokenOf('access', { scopes: ['search', 'datasets:read', 'webhooks:read'] });
    const { service, calls } = serviceWith({ findToken: () => Promise.resolve(record) });
    expect(await service.verify(ACCESS_TOKEN)).toEqual({
      tier: AuthTier.OAuth,
      accountId: 'acc_1',
      credentialId: 'usr_1:cli_1',
      scopes: ['search', 'datasets:read'],
      userId: 'usr_1',
      datasetIds: ['ds_1'],
      audience: 'https://search.example.com/v1',
    });
    expect(calls).toEqual([['findToken', `tok_${ID}`, 'access']]);
  });

  it.each([
    ['an API key', `svc_sk_${ID}_${SECRET}`],
    ['a refresh token', REFRESH_TOKEN],
    ['an id one character short', `svc_at_${ID.slice(1)}_${SECRET}`],
    ['a secret one character long', `${ACCESS_TOKEN}x`],
    ['a character outside base62', `svc_at_${ID}_${SECRET.slice(1)}-`],
    ['nothing', ''],
  ])('refuses %s with invalid_token without looking it up', async (_case, token) => {
    expect(await refusal(serviceWith().service.verify(token))).toBe('invalid_token');
  });

  it.each([
    ['unknown', null],
    ['whose secret differs', tokenOf('access', { secretHash: sha256('T'.repeat(32)) })],
    ['revoked', tokenOf('access', { revokedAt: new Date() })],
    ['of a revoked grant', tokenOf('access', { grant: grantOf({ revokedAt: new Date() }) })],
    ['of a disabled user or a deleted client', tokenOf('access', { orphaned: true })],
    ['expired', tokenOf('access', { expiresAt: new Date(Date.now() - 1) })],
  ])('refuses an access token %s with invalid_token', async (_case, record) => {
    const { service } = serviceWith({ findToken: () => Promise.resolve(record) });
    expect(await refusal(service.verify(ACCESS_TOKEN))).toBe('invalid_token');
  });
});

describe('TokensService.revoke', () => {
  it('ignores a token that has none of our forms, without looking it up', async () => {
    await expect(serviceWith().service.revoke(CLIENT, 'not-a-token')).resolves.toBeUndefined();
  });

  it('revokes an access token alone', async () => {
    const { service, calls } = serviceWith({
      findToken: () => Promise.resolve(tokenOf('access')),
      revokeToken: () => Promise.resolve(),
    });
    await service.revoke(CLIENT, ACCESS_TOKEN);
    expect(calls).toEqual([
      ['findToken', `tok_${ID}`, 'access'],
      ['revokeToken', `tok_${ID}`],
    ]);
  });

  it('revokes the whole grant of a refresh token', async () => {
    const { service, calls } = serviceWith({
      findToken: () => Promise.resolve(tokenOf('refresh')),
      revoke: () => Promise.resolve(),
    });
    await service.revoke(CLIENT, REFRESH_TOKEN);
    expect(calls).toEqual([
      ['findToken', `tok_${ID}`, 'refresh'],
      ['revoke', null, 'grt_1'],
    ]);
  });

  it("ignores another client's token", async () => {
    const { service, calls } = serviceWith({ findToken: () => Promise.resolve(tokenOf('access')) });
    await service.revoke(clientOf('cli_2', ['authorization_code']), ACCESS_TOKEN);
    expect(calls).toEqual([['findToken', `tok_${ID}`, 'access']]);
  });
});

describe('TokensService.refresh', () => {
  it('refuses a client that did not register the refresh_token grant type with unauthorized_client', async () => {
    const client = clientOf('cli_1', ['authorization_code']);
    expect(await refusal(serviceWith().service.refresh(client, { refreshToken: REFRESH_TOKEN }))).toBe(
      'unauthorized_client',
    );
  });

  it('refuses an access token presented as a refresh token with invalid_grant, without looking it up', async () => {
    expect(await refusal(serviceWith().service.refresh(CLIENT, { refreshToken: ACCESS_TOKEN }))).toBe(
      'invalid_grant',
    );
  });

  it('spends the refresh token and issues a new pair, narrowed to the scope asked for', async () => {
    const { service, calls } = serviceWith({
      findToken: () => Promise.resolve(tokenOf('refresh')),
      markTokenUsed: () => Promise.resolve(),
      insertTokens: () => Promise.resolve(),
    });
    const answer = await service.refresh(CLIENT, { refreshToken: REFRESH_TOKEN, scope: 'search' });
    expect(answer).toEqual({
      access_token: expect.stringMatching(/^svc_at_[0-9A-Za-z]{22}_[0-9A-Za-z]{32}$/) as unknown,
      token_type: 'Bearer',
      expires_in: 3_600,
      refresh_token: expect.stringMatching(/^svc_rt_[0-9A-Za-z]{22}_[0-9A-Za-z]{32}$/) as unknown,
      scope: 'search',
    });
    expect(calls.slice(0, 2)).toEqual([
      ['findToken', `tok_${ID}`, 'refresh', 'tx'],
      ['markTokenUsed', 'tx', `tok_${ID}`],
    ]);
    const [name, executor, grantId, rows] = calls[2] as [string, string, string, NewToken[]];
    expect([name, executor, grantId]).toEqual(['insertTokens', 'tx', 'grt_1']);
    expect(rows.map(({ kind, scopes }) => ({ kind, scopes }))).toEqual([
      { kind: 'access', scopes: ['search'] },
      { kind: 'refresh', scopes: ['search'] },
    ]);
    // Only hashes are stored: the token's secret is not among them.
    expect(rows[0].secretHash).toEqual(sha256(answer.access_token.split('_').at(-1)!));
  });

  it('revokes the whole family when a spent refresh token is presented again', async () => {
    const { service, calls } = serviceWith({
      findToken: () => Promise.resolve(tokenOf('refresh', { usedAt: new Date() })),
      revoke: () => Promise.resolve(),
    });
    expect(await refusal(service.refresh(CLIENT, { refreshToken: REFRESH_TOKEN }))).toBe('invalid_grant');
    expect(calls.at(-1)).toEqual(['revoke', 'tx', 'grt_1']);
  });

  it('refuses a scope wider than the refresh token holds with invalid_scope', async () => {
    const { service } = serviceWith({ findToken: () => Promise.resolve(tokenOf('refresh')) });
    const asked = { refreshToken: REFRESH_TOKEN, scope: 'search datasets:write' };
    expect(await refusal(service.refresh(CLIENT, asked))).toBe('invalid_scope');
  });

  it('refuses a refresh token for another resource with invalid_target', async () => {
    const { service } = serviceWith({ findToken: () => Promise.resolve(tokenOf('refresh')) });
    const asked = { refreshToken: REFRESH_TOKEN, resource: 'https://search.example.com/v1/mcp' };
    expect(await refusal(service.refresh(CLIENT, asked))).toBe('invalid_target');
  });
});

describe('TokensService.exchangeCode', () => {
  const code = { code: 'the-code', codeVerifier: VERIFIER };

  it('issues tokens of the grant for its code and the verifier of its challenge', async () => {
    const { service, calls } = serviceWith({
      findByCodeForUpdate: () => Promise.resolve(grantOf()),
      markCodeUsed: () => Promise.resolve(),
      insertTokens: () => Promise.resolve(),
    });
    const answer = await service.exchangeCode(CLIENT, code);
    expect(answer.scope).toBe('search datasets:read');
    expect(calls.slice(0, 2)).toEqual([
      ['findByCodeForUpdate', 'tx', sha256('the-code')],
      ['markCodeUsed', 'tx', 'grt_1'],
    ]);
  });

  it('spends a code at its first presentation, even with a wrong verifier', async () => {
    const { service, calls } = serviceWith({
      findByCodeForUpdate: () => Promise.resolve(grantOf()),
      markCodeUsed: () => Promise.resolve(),
    });
    const wrong = { ...code, codeVerifier: `${VERIFIER.slice(0, -1)}Y` };
    expect(await refusal(service.exchangeCode(CLIENT, wrong))).toBe('invalid_grant');
    expect(calls.at(-1)).toEqual(['markCodeUsed', 'tx', 'grt_1']);
  });

  it('revokes the grant, and so its tokens, when its code is presented a second time', async () => {
    const { service, calls } = serviceWith({
      findByCodeForUpdate: () => Promise.resolve(grantOf({ codeUsedAt: new Date() })),
      revoke: () => Promise.resolve(),
    });
    expect(await refusal(service.exchangeCode(CLIENT, code))).toBe('invalid_grant');
    expect(calls.at(-1)).toEqual(['revoke', 'tx', 'grt_1']);
  });

  it.each([
    ["another client's code", clientOf('cli_2', ['authorization_code']), {}, 'invalid_grant'],
    ['an expired code', CLIENT, { codeExpiresAt: new Date(Date.now() - 1) }, 'invalid_grant'],
    ['a code of a revoked grant', CLIENT, { revokedAt: new Date() }, 'invalid_grant'],
  ])('refuses %s with %s', async (_case, client, overrides, error) => {
    const { service } = serviceWith({
      findByCodeForUpdate: () => Promise.resolve(grantOf(overrides)),
      markCodeUsed: () => Promise.resolve(),
    });
    expect(await refusal(service.exchangeCode(client, code))).toBe(error);
  });

  it('refuses a redirect URI other than the authorization request sent, and another resource', async () => {
    const members = {
      findByCodeForUpdate: () => Promise.resolve(grantOf()),
      markCodeUsed: () => Promise.resolve(),
    };
    const redirect = { ...code, redirectUri: 'http://127.0.0.1:8977/callback' };
    expect(await refusal(serviceWith(members).service.exchangeCode(CLIENT, redirect))).toBe('invalid_grant');
    const resource = { ...code, resource: 'https://search.example.com/v1/mcp' };
    expect(await refusal(serviceWith(members).service.exchangeCode(CLIENT, resource))).toBe('invalid_target');
  });
});
