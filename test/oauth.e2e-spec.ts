import { createHash } from 'node:crypto';
import http from 'node:http';
import { auth } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  authorizationCode,
  authorizationUrl,
  authorizeInBrowser,
  exchangeCode,
  FormBrowser,
  formField,
  pkcePair,
  postForm,
  REDIRECT_URI,
  registerClient,
  type RegisteredClient,
  TestClientProvider,
  tokensFor,
} from './utils/oauth.js';
import { bearer, startSecondApi, startTestApp, type TestApp } from './utils/test-app.js';
import { createUser, type CreatedUser } from './utils/users.js';

describe('OAuth 2.1 authorization server', () => {
  let t: TestApp;
  let member: CreatedUser;
  let client: RegisteredClient;

  beforeAll(async () => {
    t = await startTestApp({ SIGN_IN_MAX_ATTEMPTS: '1000', OAUTH_REGISTRATIONS_PER_HOUR: '1000' });
    member = await createUser(t, { account: 'acme' });
    client = await registerClient(t);
  });
  afterAll(() => t.close());

  it('runs the whole flow with the MCP SDK client: discovery to revocation', async () => {
    const provider = new TestClientProvider(new FormBrowser(t.url), member);
    const serverUrl = `${t.url}/v1`;
    expect(await auth(provider, { serverUrl })).toBe('REDIRECT');
    // Registered dynamically, and sent back with a code and the state it chose.
    expect(provider.information?.client_id).toMatch(/^cli_/);
    expect(provider.returnedTo?.searchParams.get('state')).toBe('sdk-state');
    expect(provider.returnedTo?.searchParams.get('iss')).toBe(t.url);
    const code = provider.returnedTo!.searchParams.get('code')!;
    expect(await auth(provider, { serverUrl, authorizationCode: code })).toBe('AUTHORIZED');

    const first = provider.saved!;
    expect(first.access_token).toMatch(/^svc_at_[0-9A-Za-z]{22}_[0-9A-Za-z]{32}$/);
    expect(first.refresh_token).toMatch(/^svc_rt_/);
    expect(first.expires_in).toBe(3600);
    expect(first.scope?.split(' ').sort()).toEqual([
      'datasets:read',
      'datasets:write',
      'documents:read',
      'documents:write',
      'search',
    ]);
    const created = await t.http
      .post('/v1/datasets')
      .set(bearer(first.access_token))
      .send({ name: 'by agent' })
      .expect(201);
    const listed = await t.http.get('/v1/datasets').set(bearer(first.access_token)).expect(200);
    expect(listed.body.datasets.map((d: { id: string }) => d.id)).toContain(created.body.id);
    expect(listed.headers['x-ratelimit-limit']).toBe('15000');

    // With tokens in hand, auth() refreshes: a new pair, the old refresh token spent.
    expect(await auth(provider, { serverUrl })).toBe('AUTHORIZED');
    const second = provider.saved!;
    expect(second.access_token).not.toBe(first.access_token);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    await t.http.get('/v1/datasets').set(bearer(second.access_token)).expect(200);

    const revoked = await postForm(t, '/oauth/revoke', {
      client_id: provider.information!.client_id,
      token: second.access_token,
      token_type_hint: 'access_token',
    });
    expect(revoked.status).toBe(200);
    const refused = await t.http.get('/v1/datasets').set(bearer(second.access_token)).expect(401);
    expect(refused.body.code).toBe('invalid_token');
  });

  it('publishes its metadata, open to any origin', async () => {
    const metadata = await t.http.get('/.well-known/oauth-authorization-server').expect(200);
    expect(metadata.headers['access-control-allow-origin']).toBe('*');
    expect(metadata.body).toMatchObject({
      issuer: t.url,
      authorization_endpoint: `${t.url}/oauth/authorize`,
      token_endpoint: `${t.url}/oauth/token`,
      registration_endpoint: `${t.url}/oauth/register`,
      revocation_endpoint: `${t.url}/oauth/revoke`,
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      scopes_supported: [
        'datasets:read',
        'datasets:write',
        'documents:read',
        'documents:write',
        'search',
        'webhooks:read',
        'webhooks:write',
      ],
    });
    for (const [path, resource] of [
      ['/.well-known/oauth-protected-resource/v1', `${t.url}/v1`],
      ['/.well-known/oauth-protected-resource/v1/mcp', `${t.url}/v1/mcp`],
    ]) {
      const prm = await t.http.get(path).expect(200);
      expect(prm.body).toMatchObject({ resource, authorization_servers: [t.url] });
    }
    const preflight = await t.http
      .options('/oauth/token')
      .set({ Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST' })
      .expect(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
  });

  describe('authorization requests', () => {
    const { challenge } = pkcePair();

    /** A browser signed in as the member, who has let the client in once. */
    async function consentedBrowser(): Promise<FormBrowser> {
      const browser = new FormBrowser(t.url);
      await authorizeInBrowser(browser, authorizationUrl(t, client, challenge), member);
      return browser;
    }

    it('shows an error page, never a redirect, for a bad request before the person signed in or let the client in', async () => {
      const url = new URL(authorizationUrl(t, client, challenge), t.url);
      url.searchParams.set('response_type', 'x');
      const anonymous = await new FormBrowser(t.url).request(url.pathname + url.search);
      expect(anonymous.status).toBe(400);
      expect(anonymous.location).toBeNull();
      expect(anonymous.text).toContain('response_type must be code');
      // Signed in, but a stranger to this client: still no redirect.
      const stranger = await createUser(t, { account: 'acme' });
      const browser = new FormBrowser(t.url);
      const signIn = await browser.request(authorizationUrl(t, client, challenge));
      await browser.request('/oauth/sign-in', {
        form: {
          return_to: formField(signIn.text, 'return_to'),
          email: stranger.user.email,
          password: stranger.password,
        },
      });
      const signedIn = await browser.request(url.pathname + url.search);
      expect(signedIn.status).toBe(400);
      expect(signedIn.location).toBeNull();
    });

    it.each([
      ['an unregistered redirect URI', { redirectUri: 'https://evil.example/callback' }],
      ['a longer path', { redirectUri: `${REDIRECT_URI}/../../evil` }],
      ['another port of the same loopback address', { redirectUri: 'http://127.0.0.1:1/callback' }],
      ['an added query', { redirectUri: `${REDIRECT_URI}?next=https://evil.example` }],
      ['another host spelling', { redirectUri: 'http://localhost:53682/callback' }],
    ])('shows an error page, never a redirect, for %s', async (_case, options) => {
      const page = await new FormBrowser(t.url).request(authorizationUrl(t, client, challenge, options));
      expect(page.status).toBe(400);
      expect(page.location).toBeNull();
      expect(page.text).toContain('an address it has not registered');
    });

    it('shows an error page for an unknown client', async () => {
      const page = await new FormBrowser(t.url).request(
        authorizationUrl(t, { ...client, client_id: 'cli_unknown' }, challenge),
      );
      expect(page.status).toBe(400);
      expect(page.location).toBeNull();
    });

    it.each([
      ['plain PKCE', { code_challenge_method: 'plain' }, 'invalid_request'],
      ['no PKCE', { code_challenge: '' }, 'invalid_request'],
      ['an unknown scope', { scope: 'datasets:read admin' }, 'invalid_scope'],
      ['no resource', { resource: '' }, 'invalid_target'],
      ['another resource', { resource: 'https://elsewhere.example/v1' }, 'invalid_target'],
      ['another response type', { response_type: 'token' }, 'unsupported_response_type'],
    ])(
      'sends the client back for %s (%j): error %s, once the person let it in',
      async (_case, override, error) => {
        const url = new URL(authorizationUrl(t, client, challenge), t.url);
        for (const [name, value] of Object.entries(override)) url.searchParams.set(name, value);
        const page = await (await consentedBrowser()).request(url.pathname + url.search);
        expect(page.status).toBe(302);
        const back = new URL(page.location!);
        expect(back.origin + back.pathname).toBe(REDIRECT_URI);
        expect(back.searchParams.get('error')).toBe(error);
        expect(back.searchParams.get('state')).toBe('some-state');
        expect(back.searchParams.get('code')).toBeNull();
      },
    );

    it('refuses a parameter given twice, rather than read either', async () => {
      const url = new URL(authorizationUrl(t, client, challenge, { scope: 'datasets:read' }), t.url);
      url.searchParams.append('scope', 'datasets:write');
      const page = await (await consentedBrowser()).request(url.pathname + url.search);
      expect(new URL(page.location!).searchParams.get('error')).toBe('invalid_request');
      const twice = new URL(authorizationUrl(t, client, challenge), t.url);
      twice.searchParams.append('redirect_uri', 'https://evil.example/cb');
      const refused = await new FormBrowser(t.url).request(twice.pathname + twice.search);
      expect(refused.status).toBe(400);
      expect(refused.location).toBeNull();
    });

    it('returns access_denied when the person denies', async () => {
      const back = await authorizeInBrowser(
        new FormBrowser(t.url),
        authorizationUrl(t, client, challenge),
        member,
        {
          decision: 'deny',
        },
      );
      expect(back.searchParams.get('error')).toBe('access_denied');
      expect(back.searchParams.get('state')).toBe('some-state');
      expect(back.searchParams.get('code')).toBeNull();
    });

    it('never sends the sign-in form anywhere but back to the authorization endpoint', async () => {
      const browser = new FormBrowser(t.url);
      for (const returnTo of ['https://evil.example/', '//evil.example/oauth/authorize?x', '/v1/datasets']) {
        const page = await browser.request('/oauth/sign-in', {
          form: { return_to: returnTo, email: member.user.email, password: member.password },
        });
        expect(page.status).toBe(400);
        expect(page.location).toBeNull();
      }
    });

    it('refuses a consent answer from another site, or for a page shown to someone else', async () => {
      const browser = new FormBrowser(t.url);
      const first = await browser.request(authorizationUrl(t, client, challenge));
      const signedIn = await browser.request('/oauth/sign-in', {
        form: {
          return_to: formField(first.text, 'return_to'),
          email: member.user.email,
          password: member.password,
        },
      });
      const consent = await browser.request(signedIn.location!);
      const requestId = formField(consent.text, 'request_id');
      const forged = await browser.request('/oauth/authorize/decision', {
        form: { request_id: requestId, decision: 'approve', datasets: 'all' },
        site: 'cross-site',
      });
      expect(forged.status).toBe(403);
      expect(JSON.parse(forged.text)).toEqual({
        error: 'access_denied',
        error_description: expect.stringMatching(/^Cross-site request refused/),
      });

      const other = await createUser(t, { account: 'acme' });
      const otherBrowser = new FormBrowser(t.url);
      await authorizeInBrowser(otherBrowser, authorizationUrl(t, client, challenge), other, {
        decision: 'deny',
      });
      const stolen = await otherBrowser.request('/oauth/authorize/decision', {
        form: { request_id: requestId, decision: 'approve', datasets: 'all' },
      });
      expect(stolen.status).toBe(400);
      expect(stolen.location).toBeNull();
      // Answered by neither, the page still works once for its own user, and only once.
      const own = await browser.request('/oauth/authorize/decision', {
        form: { request_id: requestId, decision: 'approve', datasets: 'all' },
      });
      expect(own.status).toBe(303);
      expect(new URL(own.location!).searchParams.get('code')).toBeTruthy();
      const replay = await browser.request('/oauth/authorize/decision', {
        form: { request_id: requestId, decision: 'approve', datasets: 'all' },
      });
      expect(replay.status).toBe(400);
    });
  });

  describe('the token endpoint', () => {
    it('refuses a code_verifier that does not match the challenge', async () => {
      const grant = await authorizationCode(t, client, member);
      const response = await exchangeCode(t, client, { ...grant, verifier: pkcePair().verifier });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        error: 'invalid_grant',
        error_description: expect.stringMatching(/code_verifier/),
      });
    });

    it('honours a code once; a second use revokes the tokens issued from it', async () => {
      const grant = await authorizationCode(t, client, member);
      const first = await exchangeCode(t, client, grant);
      expect(first.status).toBe(200);
      expect(first.headers['cache-control']).toBe('no-store');
      await t.http.get('/v1/datasets').set(bearer(first.body.access_token)).expect(200);
      const second = await exchangeCode(t, client, grant);
      expect(second.status).toBe(400);
      expect(second.body.error).toBe('invalid_grant');
      await t.http.get('/v1/datasets').set(bearer(first.body.access_token)).expect(401);
      const refreshed = await postForm(t, '/oauth/token', {
        grant_type: 'refresh_token',
        client_id: client.client_id,
        refresh_token: first.body.refresh_token,
      });
      expect(refreshed.body.error).toBe('invalid_grant');
    });

    it("refuses a code at another client's token request, or with another redirect URI", async () => {
      const other = await registerClient(t);
      const grant = await authorizationCode(t, client, member);
      expect((await exchangeCode(t, other, grant)).body.error).toBe('invalid_grant');
      const second = await authorizationCode(t, client, member);
      const response = await exchangeCode(t, client, { ...second, redirectUri: 'http://127.0.0.1:9/other' });
      expect(response.body.error).toBe('invalid_grant');
    });

    it('rotates refresh tokens; reusing a spent one revokes the whole family', async () => {
      const tokens = await tokensFor(t, client, member);
      const refresh = (token: string) =>
        postForm(t, '/oauth/token', {
          grant_type: 'refresh_token',
          client_id: client.client_id,
          refresh_token: token,
        });
      const rotated = await refresh(tokens.refresh_token);
      expect(rotated.status).toBe(200);
      expect(rotated.body.refresh_token).not.toBe(tokens.refresh_token);
      await t.http.get('/v1/datasets').set(bearer(rotated.body.access_token)).expect(200);

      const reused = await refresh(tokens.refresh_token);
      expect(reused.status).toBe(400);
      expect(reused.body.error).toBe('invalid_grant');
      await t.http.get('/v1/datasets').set(bearer(rotated.body.access_token)).expect(401);
      expect((await refresh(rotated.body.refresh_token)).body.error).toBe('invalid_grant');
    });

    it('narrows scopes at refresh, never widens them', async () => {
      const tokens = await tokensFor(t, client, member, { scope: 'datasets:read search' });
      const refresh = (scope: string, token: string) =>
        postForm(t, '/oauth/token', {
          grant_type: 'refresh_token',
          client_id: client.client_id,
          refresh_token: token,
          scope,
        });
      const wider = await refresh('datasets:read datasets:write', tokens.refresh_token);
      expect(wider.body.error).toBe('invalid_scope');
      const narrower = await refresh('search', tokens.refresh_token);
      expect(narrower.body.scope).toBe('search');
    });

    it('authenticates confidential clients by HTTP Basic or in the body, and refuses a wrong secret', async () => {
      const confidential = await registerClient(t, { token_endpoint_auth_method: 'client_secret_basic' });
      expect(confidential.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const basic = `Basic ${Buffer.from(`${confidential.client_id}:${confidential.client_secret}`).toString('base64')}`;
      const grant = await authorizationCode(t, confidential, member);
      const noSecret = await postForm(t, '/oauth/token', {
        grant_type: 'authorization_code',
        client_id: confidential.client_id,
        code: grant.code,
        code_verifier: grant.verifier,
      });
      expect(noSecret.status).toBe(401);
      expect(noSecret.body.error).toBe('invalid_client');

      const second = await authorizationCode(t, confidential, member);
      const wrong = `Basic ${Buffer.from(`${confidential.client_id}:not-the-secret`).toString('base64')}`;
      const refused = await postForm(
        t,
        '/oauth/token',
        { grant_type: 'authorization_code', code: second.code, code_verifier: second.verifier },
        { Authorization: wrong },
      );
      expect(refused.status).toBe(401);
      expect(refused.headers['www-authenticate']).toMatch(/^Basic/);

      const third = await authorizationCode(t, confidential, member);
      const ok = await postForm(
        t,
        '/oauth/token',
        { grant_type: 'authorization_code', code: third.code, code_verifier: third.verifier },
        { Authorization: basic },
      );
      expect(ok.status).toBe(200);
      const postClient = await registerClient(t, { token_endpoint_auth_method: 'client_secret_post' });
      const byPost = await authorizationCode(t, postClient, member);
      const posted = await exchangeCode(t, postClient, byPost, {
        client_secret: postClient.client_secret!,
      });
      expect(posted.status).toBe(200);
    });

    it('answers OAuth errors for a malformed request', async () => {
      expect((await postForm(t, '/oauth/token', { client_id: client.client_id })).body).toEqual({
        error: 'invalid_request',
        error_description: 'grant_type is required',
      });
      const password = await postForm(t, '/oauth/token', {
        client_id: client.client_id,
        grant_type: 'password',
      });
      expect(password.body.error).toBe('unsupported_grant_type');
      expect((await postForm(t, '/oauth/token', { grant_type: 'authorization_code' })).status).toBe(401);
      const json = await t.http.post('/oauth/token').send({ grant_type: 'authorization_code' });
      // Refused before the handler (415 elsewhere in the API), in OAuth's terms, and readable cross-origin.
      expect(json.status).toBe(400);
      expect(json.body).toEqual({
        error: 'invalid_request',
        error_description: expect.stringMatching(/Content-Type/),
      });
      expect(json.headers['access-control-allow-origin']).toBe('*');
    });
  });

  describe('tokens at the API', () => {
    it('works only at the resource it was issued for', async () => {
      const tokens = await tokensFor(t, client, member, { resource: `${t.url}/v1/mcp` });
      const response = await t.http.get('/v1/datasets').set(bearer(tokens.access_token)).expect(401);
      expect(response.body.code).toBe('invalid_token');
    });

    it('holds only the scopes granted: 403 insufficient_scope beyond them', async () => {
      const tokens = await tokensFor(t, client, member, { scope: 'datasets:read' });
      expect(tokens.scope).toBe('datasets:read');
      await t.http.get('/v1/datasets').set(bearer(tokens.access_token)).expect(200);
      const response = await t.http
        .post('/v1/datasets')
        .set(bearer(tokens.access_token))
        .send({ name: 'x' })
        .expect(403);
      expect(response.body).toMatchObject({
        code: 'insufficient_scope',
        details: { required_scope: 'datasets:write' },
      });
      // RFC 6750's challenge names the scope, with those the token holds, for a client to ask for
      // them (MCP's step-up) without losing any.
      expect(response.headers['www-authenticate']).toBe(
        `Bearer realm="dataset-search", error="insufficient_scope", scope="datasets:read datasets:write", ` +
          `resource_metadata="${t.url}/.well-known/oauth-protected-resource/v1"`,
      );
    });

    it("never grants more than the person's role holds", async () => {
      const viewer = await createUser(t, { account: 'acme', role: 'viewer' });
      const tokens = await tokensFor(t, client, viewer);
      expect(tokens.scope.split(' ').sort()).toEqual(['datasets:read', 'documents:read', 'search']);
      await t.http.post('/v1/datasets').set(bearer(tokens.access_token)).send({ name: 'x' }).expect(403);
    });

    it('keeps a grant for chosen datasets to those: any other is 404 dataset_not_found', async () => {
      const key = await t.createApiKey('acme');
      const create = async (name: string) =>
        (await t.http.post('/v1/datasets').set(bearer(key)).send({ name }).expect(201)).body.id as string;
      const [inside, outside] = [await create('granted'), await create('not granted')];
      const tokens = await tokensFor(t, client, member, { datasetIds: [inside] });
      const as = bearer(tokens.access_token);

      await t.http.get(`/v1/datasets/${inside}`).set(as).expect(200);
      const hidden = await t.http.get(`/v1/datasets/${outside}`).set(as).expect(404);
      expect(hidden.body.code).toBe('dataset_not_found');
      const listed = await t.http.get('/v1/datasets').set(as).expect(200);
      expect(listed.body.datasets.map((d: { id: string }) => d.id)).toEqual([inside]);
      await t.http.post('/v1/mcp/query').set(as).send({ dataset_id: outside, query: 'anything' }).expect(404);
      await t.http.post(`/v1/datasets/${outside}/documents`).set(as).send({ content: 'no' }).expect(404);
      await t.http.delete(`/v1/datasets/${outside}`).set(as).expect(404);
      const created = await t.http.post('/v1/datasets').set(as).send({ name: 'new' }).expect(403);
      expect(created.body.code).toBe('grant_restricted');
    });
  });

  describe('registration', () => {
    it.each([
      ['plain HTTP to another host', ['http://app.example/callback'], 'invalid_redirect_uri'],
      ['a fragment', ['https://app.example/callback#x'], 'invalid_redirect_uri'],
      ['no redirect URI', [], 'invalid_redirect_uri'],
    ])('refuses %s', async (_case, uris, error) => {
      const response = await t.http.post('/oauth/register').send({ redirect_uris: uris }).expect(400);
      expect(response.body).toEqual({ error, error_description: expect.any(String) });
    });

    it('refuses unknown auth methods and grant types', async () => {
      const base = { redirect_uris: ['https://app.example/cb'] };
      for (const body of [
        { ...base, token_endpoint_auth_method: 'private_key_jwt' },
        { ...base, grant_types: ['client_credentials'] },
        { ...base, response_types: ['token'] },
      ]) {
        const response = await t.http.post('/oauth/register').send(body).expect(400);
        expect(response.body.error).toBe('invalid_client_metadata');
      }
    });

    it('registers an HTTPS client as confidential by default (RFC 7591), and shows its secret once', async () => {
      const response = await t.http
        .post('/oauth/register')
        .send({ redirect_uris: ['https://app.example/cb'] })
        .expect(201);
      expect(response.body).toMatchObject({
        client_id: expect.stringMatching(/^cli_/),
        client_secret: expect.any(String),
        client_secret_expires_at: 0,
        token_endpoint_auth_method: 'client_secret_basic',
        grant_types: ['authorization_code'],
      });
      const { rows } = await t.sql.query<{ secret_hash: Buffer }>(
        'SELECT secret_hash FROM oauth_clients WHERE id = $1',
        [response.body.client_id],
      );
      expect(rows[0].secret_hash).toEqual(createHash('sha256').update(response.body.client_secret).digest());
    });
  });

  describe('with a second API process', () => {
    let second: Awaited<ReturnType<typeof startSecondApi>>;

    beforeAll(async () => {
      second = await startSecondApi(t);
    });
    afterAll(() => second.stop());

    /**
     * A request to the second process as if through the same public address: a token is issued for a
     * resource under the address its client used, which the Host header carries.
     */
    const getThere = (path: string, token: string) =>
      new Promise<{ status: number; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
        const request = http.get(`${second.url}${path}`, {
          headers: { Authorization: `Bearer ${token}`, Host: new URL(t.url).host },
        });
        request.on('response', (response) => {
          response.resume();
          resolve({ status: response.statusCode ?? 0, headers: response.headers });
        });
        request.on('error', reject);
      });
    const statusThere = async (token: string) => (await getThere('/v1/datasets', token)).status;

    it("refuses a disabled user's tokens at once, in every process", async () => {
      const user = await createUser(t, { account: 'acme' });
      const tokens = await tokensFor(t, client, user);
      expect(await statusThere(tokens.access_token)).toBe(200);
      await t.cli('users', 'disable', user.user.id);
      expect(await statusThere(tokens.access_token)).toBe(401);
      const refreshed = await postForm(t, '/oauth/token', {
        grant_type: 'refresh_token',
        client_id: client.client_id,
        refresh_token: tokens.refresh_token,
      });
      expect(refreshed.body.error).toBe('invalid_grant');
    });

    it("refuses a deleted client's tokens at once, in every process", async () => {
      const doomed = await registerClient(t);
      const tokens = await tokensFor(t, doomed, member);
      expect(await statusThere(tokens.access_token)).toBe(200);
      expect(await t.cli('oauth-clients', 'delete', doomed.client_id)).toEqual({ deleted: doomed.client_id });
      expect(await statusThere(tokens.access_token)).toBe(401);
      const page = await new FormBrowser(t.url).request(authorizationUrl(t, doomed, pkcePair().challenge));
      expect(page.status).toBe(400);
      // Deleted once: a second delete finds no client.
      await expect(t.cli('oauth-clients', 'delete', doomed.client_id)).rejects.toMatchObject({
        stderr: expect.stringContaining('"code":"client_not_found"'),
      });
    });

    it('shares the 15,000 budget of a token between processes', async () => {
      const tokens = await tokensFor(t, client, member);
      const here = await t.http.get('/v1/datasets').set(bearer(tokens.access_token)).expect(200);
      const there = await getThere('/v1/datasets', tokens.access_token);
      expect(there.headers['x-ratelimit-limit']).toBe('15000');
      expect(Number(there.headers['x-ratelimit-remaining'])).toBe(
        Number(here.headers['x-ratelimit-remaining']) - 1,
      );
    });
  });
});

describe('OAuth client registration limit', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ OAUTH_REGISTRATIONS_PER_HOUR: '2' });
  });
  afterAll(() => t.close());

  it('answers 429 rate_limit_exceeded past the hourly number of registrations', async () => {
    await registerClient(t);
    await registerClient(t);
    const response = await t.http
      .post('/oauth/register')
      .send({ redirect_uris: [REDIRECT_URI] })
      .expect(429);
    expect(response.body).toEqual({
      error: 'rate_limit_exceeded',
      error_description: expect.stringMatching(/^Too many client registrations/),
      retry_after: expect.any(Number),
    });
    expect(response.headers['access-control-allow-origin']).toBe('*');
  });
});
