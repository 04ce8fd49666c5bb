import { gzipSync } from 'node:zlib';
import {
  authorizationCode,
  authorizationUrl,
  exchangeCode,
  FormBrowser,
  pkcePair,
  postForm,
  REDIRECT_URI,
  registerClient,
  type RegisteredClient,
  tokensFor,
} from './utils/oauth.js';
import { bearer, startTestApp, type TestApp } from './utils/test-app.js';
import { createUser, type CreatedUser, SAME_ORIGIN, signIn } from './utils/users.js';

/** OAuth's error body, and nothing of the API's. */
const OAUTH_ERROR = { error: expect.any(String), error_description: expect.any(String) };

describe('The authorization server under hostile input', () => {
  let t: TestApp;
  let member: CreatedUser;
  let client: RegisteredClient;

  beforeAll(async () => {
    t = await startTestApp({ SIGN_IN_MAX_ATTEMPTS: '1000', OAUTH_REGISTRATIONS_PER_HOUR: '1000' });
    member = await createUser(t, { account: 'acme' });
    client = await registerClient(t);
  });
  afterAll(() => t.close());

  /** Nothing the tests sent was logged as a failure of the service. */
  afterEach(() => {
    expect(t.output()).not.toMatch(/"level":50/);
  });

  describe('empty bodies', () => {
    it.each(['/oauth/token', '/oauth/revoke'])('answers 400 invalid_request at %s', async (path) => {
      const none = await t.http.post(path);
      expect(none.status).toBe(400);
      expect(none.body).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
      const emptyForm = await t.http.post(path).type('form').send('');
      expect(emptyForm.status).toBe(400);
      expect(emptyForm.body.error).toBe('invalid_request');
    });

    it('shows the sign-in form page again for an empty sign-in', async () => {
      const page = await t.http.post('/oauth/sign-in').set('Accept', 'text/html');
      expect(page.status).toBe(400);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
    });

    it('answers 400 to a consent decision without a body, signed in', async () => {
      const cookie = await signIn(t, member);
      const response = await t.http
        .post('/oauth/authorize/decision')
        .set({ Cookie: cookie, ...SAME_ORIGIN, Accept: 'text/html' });
      expect(response.status).toBe(400);
      expect(response.text).toContain('expired or was answered already');
    });
  });

  describe('text PostgreSQL cannot store', () => {
    // A form cannot carry a lone surrogate: its bytes decode as U+FFFD, an unknown client like another.
    it('answers 400 invalid_client for U+0000 in client_id at token and revoke', async () => {
      for (const path of ['/oauth/token', '/oauth/revoke']) {
        const response = await postForm(t, path, {
          client_id: 'cli\u0000x',
          grant_type: 'refresh_token',
          token: 'x',
        });
        expect(response.status).toBe(400);
        expect(response.body).toEqual({
          error: 'invalid_client',
          error_description: expect.stringContaining('client_id'),
        });
      }
    });

    it('answers 400 for U+0000 in client_id at authorize: a page for a browser, OAuth JSON otherwise', async () => {
      const path = `/oauth/authorize?client_id=${encodeURIComponent('cli\u0000x')}&response_type=code`;
      const page = await t.http.get(path).set('Accept', 'text/html,application/xhtml+xml');
      expect(page.status).toBe(400);
      expect(page.text).toContain('client_id');
      const json = await t.http.get(path);
      expect(json.status).toBe(400);
      expect(json.body).toEqual({
        error: 'invalid_client',
        error_description: expect.stringContaining('client_id'),
      });
    });

    it.each([
      ['client_name', { client_name: 'a\u0000b' }],
      ['client_name', { client_name: 'a\ud800b' }],
      ['software_id', { software_id: '\udc00' }],
      ['software_version', { software_version: 'v\u0000' }],
      ['contacts[0]', { contacts: ['ada\u0000@example.com'] }],
      ['redirect_uris[0]', { redirect_uris: ['https://a.example/\u0000'] }],
      ['redirect_uris[0]', { redirect_uris: ['https://a.example/\ud800'] }],
      ['client_uri', { client_uri: 'https://a.example/\u0000' }],
      ['logo_uri', { logo_uri: 'https://a.example/\ud83d' }],
      ['body', { ['k\u0000']: 1 }],
    ])('answers 400 invalid_client_metadata naming %s in a registration', async (field, metadata) => {
      const response = await t.http
        .post('/oauth/register')
        .send({ redirect_uris: ['https://app.example/cb'], ...metadata });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        error: 'invalid_client_metadata',
        error_description: expect.stringContaining(field),
      });
    });
  });

  describe('redirects', () => {
    it('never redirects to a registered https URI for someone who has not signed in', async () => {
      const registered = await registerClient(t, { redirect_uris: ['https://anywhere.example/cb'] });
      const path = `/oauth/authorize?client_id=${registered.client_id}&response_type=x`;
      const page = await new FormBrowser(t.url).request(path);
      expect(page.status).toBe(400);
      expect(page.location).toBeNull();
    });
  });

  describe('bracketed parameters', () => {
    it.each(['scope', 'state', 'resource'])(
      'answers 400 invalid_request for %s[a] at authorize',
      async (name) => {
        const { challenge } = pkcePair();
        const url = new URL(authorizationUrl(t, client, challenge), t.url);
        url.searchParams.set(`${name}[a]`, 'search');
        const page = await new FormBrowser(t.url).request(url.pathname + url.search);
        expect(page.status).toBe(400);
        expect(page.location).toBeNull();
        expect(page.text).toContain(`${name} must be a single plain value`);
      },
    );

    it('answers 400 invalid_request for a bracketed parameter at the token endpoint', async () => {
      const response = await postForm(t, '/oauth/token', {
        'grant_type[a]': 'refresh_token',
        grant_type: 'refresh_token',
        client_id: client.client_id,
      });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        error: 'invalid_request',
        error_description: 'grant_type must be a single plain value, not grant_type[...]',
      });
    });
  });

  describe("bodies the endpoints cannot read, in OAuth's body", () => {
    it.each([
      ['malformed JSON', '/oauth/register', { 'Content-Type': 'application/json' }, '{bad'],
      [
        'a body that is not gzip',
        '/oauth/token',
        { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Encoding': 'gzip' },
        gzipSync('grant_type=x').subarray(0, 6),
      ],
      [
        'a 2 MB form',
        '/oauth/token',
        { 'Content-Type': 'application/x-www-form-urlencoded' },
        `a=${'x'.repeat(2_000_000)}`,
      ],
      [
        'a Latin-1 form',
        '/oauth/revoke',
        { 'Content-Type': 'application/x-www-form-urlencoded; charset=latin1' },
        'token=x',
      ],
      ['JSON at a form route', '/oauth/token', { 'Content-Type': 'application/json' }, '{}'],
      [
        'a form at the JSON route',
        '/oauth/register',
        { 'Content-Type': 'application/x-www-form-urlencoded' },
        'a=b',
      ],
    ])('answers %s at %s with invalid_request', async (_case, path, headers, body) => {
      const response = await t.http.post(path).set(headers).send(body);
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
      expect(response.headers['access-control-allow-origin']).toBe('*');
    });

    it('says which media type a form route takes, and which charset', async () => {
      const response = await t.http
        .post('/oauth/token')
        .set('Content-Type', 'application/x-www-form-urlencoded; charset=latin1')
        .send('grant_type=x');
      expect(response.body.error_description).toBe(
        'Content-Type must be application/x-www-form-urlencoded; charset=utf-8',
      );
    });

    it('answers a registration over 64 KB without reading it whole', async () => {
      const response = await t.http
        .post('/oauth/register')
        .send({ redirect_uris: [REDIRECT_URI], client_name: 'x'.repeat(70_000) });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        error: 'invalid_request',
        error_description: 'The request body exceeds 65536 bytes',
      });
      const huge = await fetch(`${t.url}/oauth/register`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: Buffer.alloc(15_600_000, 0x20),
      });
      expect(huge.status).toBe(400);
      expect(await huge.json()).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
    });

    it("answers a method or path the server has no route for in OAuth's body", async () => {
      const post = await t.http.post('/oauth/authorize');
      expect(post.status).toBe(405);
      expect(post.body).toEqual({
        error: 'invalid_request',
        error_description: expect.stringMatching(/^POST/),
      });
      expect(post.headers.allow).toBe('GET, HEAD');
      const missing = await t.http.get('/oauth/nothing-here');
      expect(missing.status).toBe(404);
      expect(missing.body).toEqual(OAUTH_ERROR);
    });
  });

  describe('registration rules', () => {
    it.each([
      ['redirect_uris', { redirect_uris: ['https://user:pw@app.example/cb'] }, 'invalid_redirect_uri'],
      ['redirect_uris', { redirect_uris: ['https://user@app.example/cb'] }, 'invalid_redirect_uri'],
      ['client_uri', { client_uri: 'https://user:pw@app.example/' }, 'invalid_client_metadata'],
    ])('refuses a user name or password in %s', async (_field, metadata, error) => {
      const response = await t.http
        .post('/oauth/register')
        .send({ redirect_uris: ['https://app.example/cb'], ...metadata });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        error,
        error_description: expect.stringMatching(/user name or password/),
      });
    });

    it('holds a confidential client to the way it registered to authenticate', async () => {
      const byPost = await registerClient(t, { token_endpoint_auth_method: 'client_secret_post' });
      const basic = `Basic ${Buffer.from(`${byPost.client_id}:${byPost.client_secret}`).toString('base64')}`;
      const refused = await postForm(
        t,
        '/oauth/token',
        { grant_type: 'refresh_token', refresh_token: 'x' },
        {
          Authorization: basic,
        },
      );
      expect(refused.status).toBe(401);
      expect(refused.body.error).toBe('invalid_client');
      expect(refused.body.error_description).toMatch(/client_secret_post/);

      const byBasic = await registerClient(t, { token_endpoint_auth_method: 'client_secret_basic' });
      const grant = await authorizationCode(t, byBasic, member);
      const posted = await exchangeCode(t, byBasic, grant, { client_secret: byBasic.client_secret! });
      expect(posted.status).toBe(401);
      expect(posted.body.error).toBe('invalid_client');
    });
  });

  describe('grants after a password change', () => {
    it('revokes every grant of the user when their password is set, and on revoke-grants', async () => {
      const person = await createUser(t, { account: 'acme' });
      const tokens = await tokensFor(t, client, person);
      await t.http.get('/v1/datasets').set(bearer(tokens.access_token)).expect(200);
      const changed = (await t.cliInput(
        'a brand new password\n',
        'users',
        'set-password',
        person.user.id,
      )) as {
        grants_revoked: number;
      };
      expect(changed.grants_revoked).toBe(1);
      const refused = await t.http.get('/v1/datasets').set(bearer(tokens.access_token)).expect(401);
      expect(refused.body.code).toBe('invalid_token');
      const refresh = await postForm(t, '/oauth/token', {
        grant_type: 'refresh_token',
        client_id: client.client_id,
        refresh_token: tokens.refresh_token,
      });
      expect(refresh.status).toBe(400);
      expect(refresh.body.error).toBe('invalid_grant');

      const again = await tokensFor(t, client, { ...person, password: 'a brand new password' });
      await t.http.get('/v1/datasets').set(bearer(again.access_token)).expect(200);
      expect(await t.cli('users', 'revoke-grants', person.user.id)).toEqual({
        user_id: person.user.id,
        grants_revoked: 1,
      });
      await t.http.get('/v1/datasets').set(bearer(again.access_token)).expect(401);
    });
  });

  describe('the OAuth budget', () => {
    it('is counted per person and client, so that a new consent does not start a fresh one', async () => {
      const person = await createUser(t, { account: 'acme' });
      const first = await tokensFor(t, client, person);
      const second = await tokensFor(t, client, person);
      const remaining = async (token: string) =>
        Number(
          (await t.http.get('/v1/datasets').set(bearer(token)).expect(200)).headers['x-ratelimit-remaining'],
        );
      const a = await remaining(first.access_token);
      const b = await remaining(second.access_token);
      const c = await remaining(first.access_token);
      expect([b, c]).toEqual([a - 1, a - 2]);
      // Another client of the same person has a budget of its own.
      const other = await registerClient(t);
      const third = await tokensFor(t, other, person);
      expect(await remaining(third.access_token)).toBe(14_999);
    });
  });
});

describe('Rate limits of the sign-in and OAuth endpoints', () => {
  let t: TestApp;
  let client: RegisteredClient;

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_AUTH_ENDPOINTS: '20', OAUTH_REGISTRATIONS_PER_HOUR: '1000' });
    client = await registerClient(t);
  });
  afterAll(() => t.close());

  it.each([
    [
      'POST /oauth/token',
      () => t.http.post('/oauth/token').type('form').send({ grant_type: 'refresh_token' }),
    ],
    ['GET /oauth/authorize', () => t.http.get(`/oauth/authorize?client_id=${client.client_id}`)],
    ['POST /oauth/revoke', () => t.http.post('/oauth/revoke').type('form').send({ token: 'x' })],
    [
      'POST /v1/auth/session',
      () => t.http.post('/v1/auth/session').send({ email: 'a@example.com', password: 'x' }),
    ],
  ])(
    'counts %s per client network, with the headers, and answers 429 with retry_after',
    async (_route, send) => {
      // One budget per network for all of them: the first route spends it, the others meet it spent.
      const answers = await Promise.all(Array.from({ length: 30 }, () => send()));
      for (const answer of answers) expect(answer.headers['x-ratelimit-limit']).toBe('20');
      const refused = answers.filter((answer) => answer.status === 429);
      expect(refused.length).toBeGreaterThan(0);
      const body = refused[0].body as { retry_after: number; error: string };
      expect(body.retry_after).toBeGreaterThan(0);
      expect(refused[0].headers['retry-after']).toBe(String(body.retry_after));
      expect(answers.filter((answer) => answer.status >= 500)).toEqual([]);
    },
  );
});
