import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { bearer, startSecondApi, startTestApp, type TestApp } from './utils/test-app.js';
import { createUser, type CreatedUser, SAME_ORIGIN, sessionCookieOf, signIn } from './utils/users.js';

const run = promisify(execFile);

describe('Users on the command line', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  /** Runs the command line expecting it to fail, and returns its JSON error. */
  async function cliError(input: string, ...args: string[]): Promise<{ code: string; error: string }> {
    const running = run(process.execPath, ['dist/cli.js', ...args], { env: t.env });
    running.child.stdin?.end(input);
    const failure = await running.then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    if (!failure) throw new Error(`users ${args.join(' ')} succeeded`);
    expect(failure.code).toBe(1);
    return JSON.parse(failure.stderr) as { code: string; error: string };
  }

  it('creates a user with the password from standard input, and shows no hash', async () => {
    const created = (await t.cliInput(
      'a password of mine\n',
      'users',
      'create',
      '--account',
      'acme',
      '--email',
      '  Ada@Example.COM ',
      '--role',
      'admin',
      '--name',
      'Ada Lovelace',
    )) as Record<string, unknown>;
    expect(created).toEqual({
      user: {
        id: expect.stringMatching(/^usr_[0-9A-Za-z]{22}$/),
        account_id: expect.stringMatching(/^acc_/),
        email: 'ada@example.com',
        display_name: 'Ada Lovelace',
        role: 'admin',
        disabled_at: null,
        created_at: expect.any(String),
      },
    });
    const { rows } = await t.sql.query<{ password_hash: string }>('SELECT password_hash FROM users');
    expect(rows[0].password_hash).toMatch(/^\$scrypt\$/);
    expect(rows[0].password_hash).not.toContain('a password of mine');
  });

  it('generates and prints a password when none is given, and it signs in', async () => {
    const created = (await t.cliInput(
      '',
      'users',
      'create',
      '--account',
      'acme',
      '--email',
      'gen@example.com',
    )) as {
      user: { role: string };
      password: string;
    };
    expect(created.user.role).toBe('member');
    expect(created.password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    await t.http
      .post('/v1/auth/session')
      .send({ email: 'gen@example.com', password: created.password })
      .expect(201);
  });

  it('lists the users of an account', async () => {
    const listed = (await t.cli('users', 'list', '--account', 'acme')) as { users: { email: string }[] };
    expect(listed.users.map((user) => user.email)).toEqual(['ada@example.com', 'gen@example.com']);
  });

  it.each([
    [['--email', 'ada@EXAMPLE.com'], 'a long enough password', 'email_taken'],
    [['--email', 'not-an-email'], 'a long enough password', 'invalid_email'],
    [['--email', 'x@example.com', '--role', 'owner'], 'a long enough password', 'invalid_role'],
    [['--email', 'x@example.com'], 'short', 'invalid_password'],
  ])('refuses %j with %s: %s', async (args, password, code) => {
    const error = await cliError(`${password}\n`, 'users', 'create', '--account', 'acme', ...args);
    expect(error.code).toBe(code);
  });

  it.each(['disable', 'set-password', 'revoke-grants'])(
    'answers user_not_found to %s of an unknown user',
    async (command) => {
      const error = await cliError(
        'a long enough password\n',
        'users',
        command,
        'usr_0000000000000000000000',
      );
      expect(error.code).toBe('user_not_found');
    },
  );
});

describe('Sessions (the Session tier)', () => {
  let t: TestApp;
  let member: CreatedUser;

  beforeAll(async () => {
    // Every sign-in here comes from one address; the limits have specs of their own below.
    t = await startTestApp({ SIGN_IN_MAX_ATTEMPTS: '1000' });
    member = await createUser(t, { account: 'acme' });
  });
  afterAll(() => t.close());

  it('signs in with a session cookie that scripts cannot read, and says who is signed in', async () => {
    const response = await t.http
      .post('/v1/auth/session')
      .send({ email: member.user.email.toUpperCase(), password: member.password })
      .expect(201);
    expect(response.body).toEqual({
      user: {
        id: member.user.id,
        account_id: member.user.account_id,
        email: member.user.email,
        display_name: '',
        role: 'member',
      },
      expires_at: expect.any(String),
      idle_expires_at: expect.any(String),
    });
    expect(JSON.stringify(response.body)).not.toMatch(/scrypt|password/);
    const [setCookie] = [response.headers['set-cookie'] as string[] | string].flat();
    // A development server over HTTP: the plain name, without Secure.
    expect(setCookie).toMatch(
      /^svc_session=usr_[A-Za-z0-9]{22}\.[A-Za-z0-9_-]{43}; Path=\/; Expires=.+; HttpOnly; SameSite=Lax$/,
    );
    const lifetime = Date.parse(response.body.expires_at) - Date.now();
    expect(lifetime).toBeGreaterThan(7 * 86_400_000 - 60_000);
    expect(lifetime).toBeLessThanOrEqual(7 * 86_400_000);
    const idle = Date.parse(response.body.idle_expires_at) - Date.now();
    expect(idle).toBeGreaterThan(12 * 3_600_000 - 60_000);

    const cookie = sessionCookieOf(response.headers['set-cookie']);
    const current = await t.http.get('/v1/auth/session').set('Cookie', cookie).expect(200);
    expect(current.body.user.id).toBe(member.user.id);
  });

  it('authenticates every API route by the cookie, on the session budget of 15,000 an hour', async () => {
    const cookie = await signIn(t, member);
    const created = await t.http
      .post('/v1/datasets')
      .set({ Cookie: cookie, ...SAME_ORIGIN })
      .send({ name: 'from the web app' })
      .expect(201);
    const listed = await t.http.get('/v1/datasets').set('Cookie', cookie).expect(200);
    expect(listed.body.datasets.map((d: { id: string }) => d.id)).toEqual([created.body.id]);
    expect(listed.headers['x-ratelimit-limit']).toBe('15000');
  });

  it.each([
    ['a wrong password', (user: CreatedUser) => ({ email: user.user.email, password: `${user.password}x` })],
    [
      'an unknown email',
      (user: CreatedUser) => ({ email: `nobody-${user.user.email}`, password: user.password }),
    ],
  ])('answers 401 invalid_credentials for %s, and sets no cookie', async (_case, body) => {
    const response = await t.http.post('/v1/auth/session').send(body(member)).expect(401);
    expect(response.body).toEqual({
      error: 'The email or the password is wrong',
      code: 'invalid_credentials',
    });
    expect(response.headers['set-cookie']).toBeUndefined();
  });

  it('takes as long for an unknown email as for a wrong password', async () => {
    const time = async (email: string) => {
      const started = performance.now();
      await t.http.post('/v1/auth/session').send({ email, password: 'not the password' }).expect(401);
      return performance.now() - started;
    };
    const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 3; i++) {
      known.push(await time(member.user.email));
      unknown.push(await time(`unknown-${i}@example.com`));
    }
    // A password hash costs tens of milliseconds; a lookup that skipped it would take a few.
    expect(median(unknown)).toBeGreaterThan(median(known) * 0.5);
  });

  it('answers 400 validation_error for a body without a password', async () => {
    const response = await t.http.post('/v1/auth/session').send({ email: member.user.email }).expect(400);
    expect(response.body.code).toBe('validation_error');
  });

  it('says which fields are required when the body has none', async () => {
    for (const send of [
      () => t.http.post('/v1/auth/session').send({}),
      () => t.http.post('/v1/auth/session'),
    ]) {
      const response = await send().expect(400);
      expect(response.body.details.errors).toEqual([
        { field: 'email', issue: 'is required' },
        { field: 'password', issue: 'is required' },
      ]);
    }
  });

  it('gives a new session id at sign-in, and ends the one the browser held', async () => {
    const before = await signIn(t, member);
    const response = await t.http
      .post('/v1/auth/session')
      .set('Cookie', before)
      .send({ email: member.user.email, password: member.password })
      .expect(201);
    const after = sessionCookieOf(response.headers['set-cookie']);
    expect(after).not.toBe(before);
    await t.http.get('/v1/auth/session').set('Cookie', after).expect(200);
    const old = await t.http.get('/v1/auth/session').set('Cookie', before).expect(401);
    expect(old.body.code).toBe('invalid_session');
  });

  it('never adopts a session id the client chose', async () => {
    const planted = `svc_session=${member.user.id}.${'A'.repeat(43)}`;
    const response = await t.http
      .post('/v1/auth/session')
      .set('Cookie', planted)
      .send({ email: member.user.email, password: member.password })
      .expect(201);
    expect(sessionCookieOf(response.headers['set-cookie'])).not.toBe(planted);
    const refused = await t.http.get('/v1/datasets').set('Cookie', planted).expect(401);
    expect(refused.body.code).toBe('invalid_session');
  });

  it('signs out: the session ends and its cookie is cleared', async () => {
    const cookie = await signIn(t, member);
    const response = await t.http
      .delete('/v1/auth/session')
      .set({ Cookie: cookie, ...SAME_ORIGIN })
      .expect(204);
    expect([response.headers['set-cookie']].flat()[0]).toMatch(
      /^svc_session=; Path=\/; Expires=Thu, 01 Jan 1970/,
    );
    const after = await t.http.get('/v1/auth/session').set('Cookie', cookie).expect(401);
    expect(after.body.code).toBe('invalid_session');
  });

  it('answers GET /v1/auth/session without a session with 401, also for an API key', async () => {
    expect((await t.http.get('/v1/auth/session').expect(401)).body.code).toBe('authentication_required');
    const key = await t.createApiKey('acme');
    await t.http.get('/v1/auth/session').set(bearer(key)).expect(401);
  });

  describe('cross-site requests', () => {
    let cookie: string;
    beforeAll(async () => {
      cookie = await signIn(t, member);
    });
    const create = (headers: Record<string, string>) =>
      t.http
        .post('/v1/datasets')
        .set({ Cookie: cookie, ...headers })
        .send({ name: `ds ${Math.random()}` });

    it.each([
      ['no browser headers', {}],
      ['Sec-Fetch-Site: cross-site', { 'Sec-Fetch-Site': 'cross-site' }],
      ['another origin', { 'Sec-Fetch-Site': 'cross-site', Origin: 'https://evil.example' }],
      [
        'a same-site page of another origin',
        { 'Sec-Fetch-Site': 'same-site', Origin: 'https://other.127.0.0.1' },
      ],
    ])('refuses a cookie-authenticated write with %s: 403 csrf_rejected', async (_case, headers) => {
      const response = await create(headers).expect(403);
      expect(response.body).toEqual({
        error: expect.stringMatching(/^Cross-site request refused: /),
        code: 'csrf_rejected',
        details: { reason: expect.any(String) },
      });
      const { rows } = await t.sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM datasets WHERE name LIKE 'ds %'`,
      );
      expect(rows[0].n).toBe(0);
    });

    it("takes a write from the service's own origin, by Sec-Fetch-Site or by Origin", async () => {
      await create(SAME_ORIGIN).expect(201);
      await create({ Origin: t.url }).expect(201);
    });

    it('refuses a cross-site sign-out too, and lets reads through', async () => {
      await t.http.get('/v1/datasets').set({ Cookie: cookie, 'Sec-Fetch-Site': 'cross-site' }).expect(200);
      const response = await t.http
        .delete('/v1/auth/session')
        .set({ Cookie: cookie, 'Sec-Fetch-Site': 'cross-site' });
      expect(response.status).toBe(403);
      await t.http.get('/v1/auth/session').set('Cookie', cookie).expect(200);
    });

    it('does not apply to a request with a Bearer token, which a browser never adds by itself', async () => {
      const key = await t.createApiKey('acme');
      await t.http
        .post('/v1/datasets')
        .set({
          ...bearer(key),
          Cookie: cookie,
          'Sec-Fetch-Site': 'cross-site',
          Origin: 'https://evil.example',
        })
        .send({ name: 'by key' })
        .expect(201);
    });

    it('refuses a sign-in posted by another site', async () => {
      const response = await t.http
        .post('/v1/auth/session')
        .set({ 'Sec-Fetch-Site': 'cross-site', Origin: 'https://evil.example' })
        .send({ email: member.user.email, password: member.password })
        .expect(403);
      expect(response.body.code).toBe('csrf_rejected');
    });
  });

  it('gives a viewer read access only: 403 insufficient_scope on writes', async () => {
    const viewer = await createUser(t, { account: 'acme', role: 'viewer' });
    const cookie = await signIn(t, viewer);
    await t.http.get('/v1/datasets').set('Cookie', cookie).expect(200);
    const response = await t.http
      .post('/v1/datasets')
      .set({ Cookie: cookie, ...SAME_ORIGIN })
      .send({ name: 'not allowed' })
      .expect(403);
    expect(response.body).toEqual({
      error: expect.any(String),
      code: 'insufficient_scope',
      details: { required_scope: 'datasets:write' },
    });
    // A cookie is no bearer token: no challenge to ask for more scopes.
    expect(response.headers['www-authenticate']).toBeUndefined();
  });

  it('ends every session of a user whose password is changed', async () => {
    const user = await createUser(t, { account: 'acme' });
    const cookie = await signIn(t, user);
    const changed = (await t.cliInput('', 'users', 'set-password', user.user.id)) as { password: string };
    expect(changed.password).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect((await t.http.get('/v1/datasets').set('Cookie', cookie).expect(401)).body.code).toBe(
      'invalid_session',
    );
    await t.http
      .post('/v1/auth/session')
      .send({ email: user.user.email, password: user.password })
      .expect(401);
    await signIn(t, { ...user, password: changed.password });
  });

  describe('with a second API process', () => {
    let second: Awaited<ReturnType<typeof startSecondApi>>;

    beforeAll(async () => {
      second = await startSecondApi(t);
    });
    afterAll(() => second.stop());

    it('shares the session and its rate-limit budget', async () => {
      const cookie = await signIn(t, member);
      const first = await t.http.get('/v1/datasets').set('Cookie', cookie).expect(200);
      const other = await fetch(`${second.url}/v1/datasets`, { headers: { Cookie: cookie } });
      expect(other.status).toBe(200);
      expect(Number(other.headers.get('x-ratelimit-remaining'))).toBe(
        Number(first.headers['x-ratelimit-remaining']) - 1,
      );
    });

    it("refuses a disabled user's sessions at once, in every process", async () => {
      const user = await createUser(t, { account: 'acme' });
      const cookie = await signIn(t, user);
      await t.http.get('/v1/datasets').set('Cookie', cookie).expect(200);
      expect(await t.cli('users', 'disable', user.user.id)).toEqual({ disabled: user.user.id });
      const refused = await fetch(`${second.url}/v1/datasets`, { headers: { Cookie: cookie } });
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as { code: string }).code).toBe('invalid_session');
      await t.http.get('/v1/datasets').set('Cookie', cookie).expect(401);
      const again = await t.http
        .post('/v1/auth/session')
        .send({ email: user.user.email, password: user.password });
      expect(again.status).toBe(401);
      const listed = (await t.cli('users', 'list', '--account', 'acme')) as {
        users: { id: string; disabled_at: string | null }[];
      };
      expect(listed.users.find((u) => u.id === user.user.id)?.disabled_at).toEqual(expect.any(String));
    });
  });
});

describe('Sign-in limits', () => {
  let t: TestApp;
  let user: CreatedUser;

  beforeAll(async () => {
    // Behind a proxy on loopback, X-Forwarded-For names the client, so that one test host plays several.
    t = await startTestApp({ SIGN_IN_MAX_ATTEMPTS: '3', TRUST_PROXY: 'loopback' });
    user = await createUser(t);
  });
  afterAll(() => t.close());

  const attempt = (from: string, email: string, password: string) =>
    t.http.post('/v1/auth/session').set('X-Forwarded-For', from).send({ email, password });

  it('refuses an address after 3 failures in the window, even with the right password', async () => {
    for (let i = 0; i < 3; i++)
      expect((await attempt('203.0.113.1', `x${i}@example.com`, 'wrong password')).status).toBe(401);
    const blocked = await attempt('203.0.113.1', user.user.email, user.password).expect(429);
    expect(blocked.body).toEqual({
      error: expect.stringMatching(/^Too many sign-in attempts/),
      code: 'rate_limit_exceeded',
      details: { limit: 3, window_seconds: 900 },
      retry_after: expect.any(Number),
    });
    expect(blocked.body.retry_after).toBeGreaterThan(800);
    expect(blocked.headers['retry-after']).toBe(String(blocked.body.retry_after));
    await attempt('203.0.113.2', user.user.email, user.password).expect(201);
  });

  it('refuses an email after 3 failures to the networks that failed at it, and lets others through', async () => {
    const email = user.user.email;
    for (let i = 0; i < 3; i++) {
      expect((await attempt(`198.51.100.${i}`, email, 'wrong password')).status).toBe(401);
    }
    // A network that failed at the email is refused, even with the right password.
    await attempt('198.51.100.0', email, user.password).expect(429);
    // A further network of the guesser's gets one guess, then is refused too.
    expect((await attempt('198.51.100.7', email, 'wrong password')).status).toBe(401);
    await attempt('198.51.100.7', email, 'wrong password').expect(429);
    // The person, from a network of their own, is not locked out by anyone else's guesses.
    await attempt('198.51.100.9', email, user.password).expect(201);
  });

  it('does not count successful sign-ins', async () => {
    const other = await createUser(t);
    for (let i = 0; i < 5; i++) await attempt('192.0.2.7', other.user.email, other.password).expect(201);
  });
});

describe('Session cookie over HTTPS', () => {
  let t: TestApp;

  beforeAll(async () => {
    // Reached through an HTTPS proxy: the cookie is __Host- prefixed and Secure.
    t = await startTestApp({ PUBLIC_BASE_URL: 'https://search.example.com', TRUST_PROXY: 'loopback' });
  });
  afterAll(() => t.close());

  it('is __Host-svc_session, Secure, and accepted back', async () => {
    const user = await createUser(t);
    const response = await t.http
      .post('/v1/auth/session')
      .set('X-Forwarded-Proto', 'https')
      .send({ email: user.user.email, password: user.password })
      .expect(201);
    const [setCookie] = [response.headers['set-cookie'] as string[] | string].flat();
    expect(setCookie).toMatch(
      /^__Host-svc_session=usr_[A-Za-z0-9]{22}\.[A-Za-z0-9_-]{43}; Path=\/; Expires=.+; HttpOnly; Secure; SameSite=Lax$/,
    );
    const cookie = sessionCookieOf(setCookie);
    await t.http.get('/v1/auth/session').set({ Cookie: cookie, 'X-Forwarded-Proto': 'https' }).expect(200);
    // The unprefixed name means nothing here: a sibling subdomain could have set it.
    const plain = cookie.replace('__Host-', '');
    await t.http.get('/v1/datasets').set({ Cookie: plain, 'X-Forwarded-Proto': 'https' }).expect(401);
  });
});
