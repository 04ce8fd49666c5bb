import net from 'node:net';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

describe('Authentication with API keys', () => {
  let t: TestApp;
  let key: CreatedKey;

  beforeAll(async () => {
    t = await startTestApp();
    key = await t.createApiKey('acme');
  });
  afterAll(() => t.close());

  const listWith = (headers: Record<string, string>) => t.http.get('/v1/datasets').set(headers);

  it('accepts a key created by the command line', async () => {
    expect(key).toEqual({
      account_id: expect.stringMatching(/^acc_/),
      key_id: expect.stringMatching(/^key_/),
      api_key: expect.stringMatching(/^svc_sk_[0-9A-Za-z]{22}_[0-9A-Za-z]{32}$/),
    });
    await listWith(bearer(key)).expect(200);
  });

  it('creates the account once and gives it several keys', async () => {
    const second = await t.createApiKey('acme');
    expect(second.account_id).toBe(key.account_id);
    expect(second.api_key).not.toBe(key.api_key);
  });

  it('answers 401 authentication_required without credentials', async () => {
    const response = await listWith({}).expect(401);
    expect(response.body).toEqual({ error: expect.any(String), code: 'authentication_required' });
  });

  it.each([
    ['an unknown prefix', 'Bearer abc123'],
    ['a malformed API key', 'Bearer svc_sk_short'],
    ['an unknown key id', 'Bearer svc_sk_0000000000000000000000_00000000000000000000000000000000'],
  ])('answers 401 invalid_api_key for %s', async (_case, authorization) => {
    const response = await listWith({ Authorization: authorization }).expect(401);
    expect(response.body.code).toBe('invalid_api_key');
  });

  it('answers 401 invalid_api_key for a known key id with the wrong secret', async () => {
    const forged = `${key.api_key.slice(0, -32)}${'A'.repeat(32)}`;
    const response = await listWith(bearer(forged)).expect(401);
    expect(response.body.code).toBe('invalid_api_key');
  });

  it('answers 401 invalid_api_key once a key is revoked, and the command line lists it as revoked', async () => {
    const doomed = await t.createApiKey('acme');
    await listWith(bearer(doomed)).expect(200);
    expect(await t.cli('api-keys', 'revoke', doomed.key_id)).toEqual({ revoked: doomed.key_id });
    const response = await listWith(bearer(doomed)).expect(401);
    expect(response.body.code).toBe('invalid_api_key');

    const listed = (await t.cli('api-keys', 'list', '--account', 'acme')) as {
      api_keys: { key_id: string; revoked_at: string | null }[];
    };
    expect(listed.api_keys.find((k) => k.key_id === doomed.key_id)?.revoked_at).toEqual(expect.any(String));
    expect(listed.api_keys.find((k) => k.key_id === key.key_id)?.revoked_at).toBeNull();
  });

  it.each([
    ['a malformed OAuth access token', 'svc_at_sometoken'],
    ['an unknown OAuth access token', 'svc_at_0000000000000000000000_00000000000000000000000000000000'],
  ])('answers 401 for %s', async (_case, token) => {
    const response = await listWith(bearer(token)).expect(401);
    expect(response.body.code).toBe('invalid_token');
  });

  it('answers 401 invalid_authorization_header for a non-bearer scheme', async () => {
    const response = await listWith({ Authorization: 'Basic dXNlcjpwYXNz' }).expect(401);
    expect(response.body.code).toBe('invalid_authorization_header');
  });

  it('answers 401 invalid_session for a session cookie that names no session', async () => {
    const response = await listWith({ Cookie: 'theme=dark; svc_session=abc' }).expect(401);
    expect(response.body.code).toBe('invalid_session');
    await listWith({ Cookie: 'theme=dark' })
      .expect(401)
      .expect((r) => expect(r.body.code).toBe('authentication_required'));
  });

  it.each([
    ['no credentials', {}, 'Bearer realm="dataset-search"'],
    [
      'a bad key',
      { Authorization: 'Bearer svc_sk_short' },
      'Bearer realm="dataset-search", error="invalid_token"',
    ],
    [
      'an OAuth token',
      { Authorization: 'Bearer svc_at_x' },
      'Bearer realm="dataset-search", error="invalid_token"',
    ],
    [
      'another scheme',
      { Authorization: 'Basic dXNlcjpwYXNz' },
      'Bearer realm="dataset-search", error="invalid_request"',
    ],
  ])('challenges a 401 for %s with WWW-Authenticate', async (_case, headers, challenge) => {
    const response = await listWith(headers).expect(401);
    // Where to learn how to get a token (RFC 9728): the metadata of the REST API's resource.
    const metadata = `resource_metadata="${t.url}/.well-known/oauth-protected-resource/v1"`;
    expect(response.headers['www-authenticate']).toBe(`${challenge}, ${metadata}`);
  });

  it('answers 401 invalid_authorization_header for two Authorization headers, whichever comes first', async () => {
    // Node's client sends one header of a name: the request is written by hand.
    const send = (first: string, second: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(new URL(t.url).port), '127.0.0.1');
        let answer = '';
        socket.setEncoding('utf8').on('data', (part: string) => (answer += part));
        socket.on('end', () => resolve(answer)).on('error', reject);
        // Written, not ended: a half-closed socket is closed by the server before it answers.
        socket.write(
          'GET /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n' +
            `Authorization: ${first}\r\nAuthorization: ${second}\r\n\r\n`,
        );
      });
    for (const [first, second] of [
      [`Bearer ${key.api_key}`, 'Bearer svc_sk_bad'],
      ['Bearer svc_sk_bad', `Bearer ${key.api_key}`],
    ]) {
      const answer = await send(first, second);
      expect(answer).toMatch(/^HTTP\/1\.1 401 /);
      expect(answer).toContain('"code":"invalid_authorization_header"');
    }
  });

  it('ignores a token in the query string', async () => {
    const response = await t.http.get('/v1/datasets').query({ access_token: key.api_key }).expect(401);
    expect(response.body.code).toBe('authentication_required');
  });

  it('refuses a bad credential on a public route instead of treating the caller as anonymous', async () => {
    const shared = await t.http
      .post('/v1/datasets')
      .set(bearer(key))
      .send({ name: 'Public', is_public: true });
    await t.http.get(`/v1/datasets/${shared.body.id}`).expect(200);
    const response = await t.http.get(`/v1/datasets/${shared.body.id}`).set(bearer('svc_sk_bad')).expect(401);
    expect(response.body.code).toBe('invalid_api_key');
  });

  it('stores only a hash of the key and records when it was last used', async () => {
    const fresh = await t.createApiKey();
    const before = await t.sql.query('SELECT secret_hash, last_used_at FROM api_keys WHERE id = $1', [
      fresh.key_id,
    ]);
    expect(before.rows[0].last_used_at).toBeNull();
    const secret = fresh.api_key.slice(-32);
    expect(before.rows[0].secret_hash.toString('hex')).not.toContain(Buffer.from(secret).toString('hex'));
    expect(before.rows[0].secret_hash).toHaveLength(32);

    await listWith(bearer(fresh)).expect(200);
    const after = await t.sql.query('SELECT last_used_at FROM api_keys WHERE id = $1', [fresh.key_id]);
    expect(after.rows[0].last_used_at).toBeInstanceOf(Date);
  });

  it('keeps credentials out of the logs', async () => {
    await listWith(bearer(key)).set('X-Request-Id', 'trace-me-123').expect(200);
    const output = await t.waitForOutput('"id":"trace-me-123"');
    expect(output).not.toContain(key.api_key);
    expect(output).not.toContain(key.api_key.slice(-32));
  });
});

describe('Rate limits per authentication tier', () => {
  let t: TestApp;
  let key: CreatedKey;

  beforeAll(async () => {
    t = await startTestApp({
      RATE_LIMIT_API_KEY: '4',
      RATE_LIMIT_ANONYMOUS: '2',
      RATE_LIMIT_WINDOW_SECONDS: '600',
    });
    key = await t.createApiKey();
  });
  afterAll(() => t.close());

  it('counts each API key request and sets the X-RateLimit headers, then answers 429 with retry_after', async () => {
    const started = Math.floor(Date.now() / 1000);
    const resets = new Set<string>();
    for (let i = 1; i <= 4; i++) {
      // Spread over more than a second: the window's end must not move as the clock does.
      if (i > 1) await new Promise((resolve) => setTimeout(resolve, 350));
      const response = await t.http.get('/v1/datasets').set(bearer(key)).expect(200);
      expect(response.headers['x-ratelimit-limit']).toBe('4');
      expect(response.headers['x-ratelimit-remaining']).toBe(String(4 - i));
      const reset = Number(response.headers['x-ratelimit-reset']);
      expect(reset).toBeGreaterThanOrEqual(started + 599);
      expect(reset).toBeLessThanOrEqual(started + 602);
      resets.add(response.headers['x-ratelimit-reset']);
    }
    expect(resets.size).toBe(1);
    const limited = await t.http.get('/v1/datasets').set(bearer(key)).expect(429);
    expect(limited.body).toEqual({
      error: expect.any(String),
      code: 'rate_limit_exceeded',
      retry_after: expect.any(Number),
    });
    expect(limited.body.retry_after).toBeGreaterThan(590);
    expect(limited.body.retry_after).toBeLessThanOrEqual(600);
    expect(limited.headers['retry-after']).toBe(String(limited.body.retry_after));
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('gives each key its own budget', async () => {
    const another = await t.createApiKey();
    const response = await t.http.get('/v1/datasets').set(bearer(another)).expect(200);
    expect(response.headers['x-ratelimit-remaining']).toBe('3');
  });

  it('limits anonymous callers, and bad credentials, per client address at the anonymous tier', async () => {
    const first = await t.http.get('/v1/datasets/ds_0000000000000000000000').expect(404);
    expect(first.headers['x-ratelimit-limit']).toBe('2');
    await t.http.get('/v1/datasets').set(bearer('svc_sk_wrong')).expect(401);
    const limited = await t.http.get('/v1/datasets/ds_0000000000000000000000').expect(429);
    expect(limited.body.code).toBe('rate_limit_exceeded');
  });

  it('does not limit health checks', async () => {
    for (let i = 0; i < 5; i++) {
      const response = await t.http.get('/health').expect(200);
      expect(response.headers['x-ratelimit-limit']).toBeUndefined();
    }
  });
});
