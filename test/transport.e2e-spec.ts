import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { rawRequest } from './utils/raw-http.js';
import { bearer, type CreatedKey, freePort, startTestApp, type TestApp } from './utils/test-app.js';

describe('Errors and transport', () => {
  let t: TestApp;
  let key: CreatedKey;

  beforeAll(async () => {
    t = await startTestApp({ JSON_BODY_LIMIT_BYTES: '2048' });
    key = await t.createApiKey();
  });
  afterAll(() => t.close());

  const post = () => t.http.post('/v1/datasets').set(bearer(key));
  const postEncoded = (encoding: string, body: string) =>
    post().set('Content-Type', 'application/json').set('Content-Encoding', encoding).send(body);
  /** A body as the bytes are: supertest would serialise a Buffer as JSON. */
  const postBytes = (type: string, body: Buffer, headers: Record<string, string> = {}) =>
    fetch(`${t.url}/v1/datasets`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key.api_key}`, 'Content-Type': type, ...headers },
      body,
    });

  it('answers 400 invalid_json for a malformed body, not to be sniffed as anything else', async () => {
    const response = await post().set('Content-Type', 'application/json').send('{"name": ').expect(400);
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    // Served over plain HTTP without FORCE_HTTPS: no HSTS.
    expect(response.headers['strict-transport-security']).toBeUndefined();
    expect(response.body).toEqual({
      error: expect.any(String),
      code: 'invalid_json',
      details: { issue: expect.any(String) },
    });
  });

  it.each(['null', '5', '"name"', 'true', '[]'])(
    'answers 400 validation_error, not invalid_json, for the JSON value %s, which is not an object',
    async (body) => {
      const response = await post().set('Content-Type', 'application/json').send(body).expect(400);
      expect(response.body).toMatchObject({
        code: 'validation_error',
        details: { errors: [{ field: 'body', issue: 'must be a JSON object' }] },
      });
    },
  );

  it('answers 400 invalid_json for a body declared UTF-8 that is not, and creates nothing', async () => {
    // "Café" in Latin-1: 0xE9 begins no UTF-8 sequence (it was read as U+FFFD and stored, with 201).
    const latin1 = Buffer.concat([Buffer.from('{"name": "Caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
    for (const type of ['application/json', 'application/json; charset=utf-8']) {
      const response = await postBytes(type, latin1);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        error: 'The request body is not valid JSON',
        code: 'invalid_json',
        details: { issue: 'is not valid UTF-8' },
      });
    }
    const { rows } = await t.sql.query("SELECT count(*)::int AS n FROM datasets WHERE name LIKE 'Caf%'");
    expect(rows[0].n).toBe(0);
  });

  it('takes UTF-8 holding U+FFFD itself, and UTF-16 declared as such', async () => {
    const replacement = await postBytes('application/json', Buffer.from('{"name": "Sent as \ufffd"}'));
    expect(replacement.status).toBe(201);
    expect(((await replacement.json()) as { name: string }).name).toBe('Sent as \ufffd');
    const utf16 = await postBytes(
      'application/json; charset=utf-16le',
      Buffer.from('{"name": "Sent in UTF-16"}', 'utf16le'),
    );
    expect(utf16.status).toBe(201);
  });

  it('answers 400 invalid_content_encoding for a compressed body that does not decompress', async () => {
    for (const encoding of ['gzip', 'deflate', 'br', 'zstd']) {
      const response = await postEncoded(encoding, '{"name": "not compressed"}').expect(400);
      expect(response.body).toEqual({
        error: `The request body could not be decoded as ${encoding}`,
        code: 'invalid_content_encoding',
        details: { content_encoding: encoding, issue: expect.any(String) },
      });
      expect(response.headers['x-ratelimit-remaining']).toBeDefined();
    }
  });

  it.each(['compress', 'gzip, gzip'])(
    'answers 415 unsupported_media_type naming the Content-Encoding %s, not the Content-Type',
    async (encoding) => {
      const response = await postEncoded(encoding, '{"name": "x"}').expect(415);
      expect(response.body).toEqual({
        error: expect.stringContaining(`Content-Encoding ${encoding} is not supported`),
        code: 'unsupported_media_type',
        details: { content_encoding: encoding, allowed: ['identity', 'gzip', 'deflate', 'br', 'zstd'] },
      });
    },
  );

  it('decodes a zstd body', async () => {
    const body = zlib.zstdCompressSync('{"name": "Sent in zstd"}');
    const response = await postBytes('application/json', body, { 'Content-Encoding': 'zstd' });
    expect(response.status).toBe(201);
  });

  it('answers 415 unsupported_media_type for a body that is not JSON', async () => {
    const response = await post().set('Content-Type', 'text/plain').send('name=x').expect(415);
    expect(response.body).toEqual({
      error: 'Content-Type must be application/json',
      code: 'unsupported_media_type',
      details: { received: 'text/plain', allowed: ['application/json'] },
    });
  });

  it('answers 413 payload_too_large for a body over the limit, without creating anything', async () => {
    const response = await post()
      .send({ name: 'Too big', description: 'x'.repeat(3000) })
      .expect(413);
    expect(response.body).toMatchObject({ code: 'payload_too_large', details: { limit_bytes: 2048 } });
    const { rows } = await t.sql.query("SELECT count(*)::int AS n FROM datasets WHERE name = 'Too big'");
    expect(rows[0].n).toBe(0);
  });

  it('counts a refused body against the caller and answers it with the X-RateLimit headers', async () => {
    const deep = `{"name": ${'['.repeat(40)}${']'.repeat(40)}}`;
    const refused = [
      () => post().set('Content-Type', 'application/json').send('{"name": ').expect(400),
      () => post().set('Content-Type', 'application/json').send(deep).expect(400),
      () =>
        post()
          .send({ name: 'x'.repeat(3000) })
          .expect(413),
      () => post().set('Content-Type', 'application/json; charset=latin1').send('{}').expect(415),
    ];
    const remaining: number[] = [];
    for (const send of refused) {
      const response = await send();
      expect(response.headers['x-ratelimit-limit']).toBe('1000');
      expect(response.headers['x-ratelimit-reset']).toMatch(/^\d+$/);
      remaining.push(Number(response.headers['x-ratelimit-remaining']));
    }
    const first = remaining[0];
    expect(remaining).toEqual([first, first - 1, first - 2, first - 3]);
  });

  it('answers 400 validation_error for a path that cannot be decoded', async () => {
    const response = await t.http.get('/v1/datasets/%E0%A4%A').set(bearer(key)).expect(400);
    expect(response.body).toMatchObject({ code: 'validation_error', details: { field: 'path' } });
  });

  it('answers 404 not_found for an unknown route', async () => {
    const unknown = await t.http.get('/v1/nothing-here').expect(404);
    expect(unknown.body).toEqual({
      error: 'No route for GET /v1/nothing-here',
      code: 'not_found',
      details: { method: 'GET', path: '/v1/nothing-here' },
    });
    expect(unknown.headers.allow).toBeUndefined();
    await t.http.put('/v1/datasets/ds_x/nothing').set(bearer(key)).send({}).expect(404);
  });

  it('answers 405 method_not_allowed for a known path, listing the methods it takes in Allow', async () => {
    const response = await t.http.put('/v1/datasets').set(bearer(key)).send({}).expect(405);
    expect(response.headers.allow).toBe('GET, HEAD, POST');
    expect(response.body).toEqual({
      error: 'PUT is not allowed on /v1/datasets; it takes GET, HEAD, POST',
      code: 'method_not_allowed',
      details: { method: 'PUT', path: '/v1/datasets', allowed: ['GET', 'HEAD', 'POST'] },
    });
    for (const [method, path, allow] of [
      ['post', '/v1/datasets/ds_any', 'GET, HEAD, PATCH, DELETE'],
      ['post', '/v1/datasets/ds_any/documents/doc_any', 'GET, HEAD, PUT, PATCH, DELETE'],
      ['get', '/v1/mcp/query', 'POST'],
      ['put', '/v1/mcp', 'GET, HEAD, POST, DELETE'],
      ['post', '/health', 'GET, HEAD'],
      ['delete', '/oauth/token', 'POST, OPTIONS'],
      // The path as the router matches it: any case, a trailing slash.
      ['put', '/V1/Datasets/', 'GET, HEAD, POST'],
    ] as const) {
      const refused = await t.http[method](path).set(bearer(key));
      expect([path, refused.status, refused.headers.allow]).toEqual([path, 405, allow]);
      // The authorization server's paths answer in OAuth's body (docs/auth.md).
      expect(refused.body).toMatchObject(
        path.startsWith('/oauth/')
          ? { error: 'invalid_request', error_description: expect.stringContaining(path) }
          : { code: 'method_not_allowed', details: { path } },
      );
    }
    // HEAD on a path that takes no GET is refused too (its answer has no body).
    const head = await t.http.head('/v1/mcp/query').expect(405);
    expect(head.headers.allow).toBe('POST');
  });

  it('answers 500 internal_error for an unexpected failure, leaking nothing and logging the cause', async () => {
    await t.sql.query('ALTER TABLE datasets RENAME TO datasets_hidden');
    try {
      const response = await t.http.get('/v1/datasets').set(bearer(key)).expect(500);
      expect(response.body).toEqual({
        error: 'An unexpected error occurred; it has been logged',
        code: 'internal_error',
      });
      expect(response.text).not.toMatch(/datasets|relation|at \w+ \(/);
      await t.waitForOutput('relation \\"datasets\\" does not exist');
    } finally {
      await t.sql.query('ALTER TABLE datasets_hidden RENAME TO datasets');
    }
  });

  it('puts X-Request-Id on every response, keeping a well-formed id sent by the client', async () => {
    const ok = await t.http.get('/health').expect(200);
    const failed = await t.http.get('/v1/datasets').expect(401);
    const missing = await t.http.get('/nowhere').expect(404);
    for (const response of [ok, failed, missing]) {
      expect(response.headers['x-request-id']).toMatch(/^req_[0-9a-f-]{36}$/);
    }
    const traced = await t.http.get('/health').set('X-Request-Id', 'upstream-42').expect(200);
    expect(traced.headers['x-request-id']).toBe('upstream-42');
    const malformed = await t.http.get('/health').set('X-Request-Id', 'has spaces\tand tabs').expect(200);
    expect(malformed.headers['x-request-id']).toMatch(/^req_/);
  });

  it('writes one JSON log line per request, with its id and status', async () => {
    await t.http.get('/v1/datasets').set('X-Request-Id', 'log-line-check').expect(401);
    const output = await t.waitForOutput('"id":"log-line-check"');
    const line = output.split('\n').find((l) => l.includes('"id":"log-line-check"'));
    expect(JSON.parse(line ?? '{}')).toMatchObject({
      req: { id: 'log-line-check', method: 'GET', url: '/v1/datasets' },
      res: { status: 401 },
      msg: 'request completed',
    });
  });
});

describe('HTTPS', () => {
  it('redirects plain HTTP reported by a trusted proxy with 308 to the same https URL', async () => {
    const t = await startTestApp({ FORCE_HTTPS: 'true', TRUST_PROXY: 'loopback' });
    try {
      const plain = await t.http
        .post('/v1/datasets?x=1')
        .set('Host', 'api.example.com')
        .set('X-Forwarded-Proto', 'http')
        .send({ name: 'x' })
        .expect(308);
      expect(plain.headers.location).toBe('https://api.example.com/v1/datasets?x=1');
      const secure = await t.http.get('/v1/datasets').set('X-Forwarded-Proto', 'https').expect(401);
      expect(secure.headers['strict-transport-security']).toBe('max-age=31536000');
      expect(secure.headers['x-content-type-options']).toBe('nosniff');
      // Not over plain HTTP, where a browser ignores it anyway (RFC 6797).
      expect(plain.headers['strict-transport-security']).toBeUndefined();
      await t.http.get('/health').set('X-Forwarded-Proto', 'http').expect(200);
      const hostile = await t.http
        .get('/v1/datasets')
        .set('Host', 'evil.example/phish?')
        .set('X-Forwarded-Proto', 'http');
      expect(hostile.status).toBe(400);
      expect(hostile.body.code).toBe('invalid_host');
    } finally {
      await t.close();
    }
  });

  it('redirects to PUBLIC_BASE_URL when it is configured, whatever the Host header says', async () => {
    const t = await startTestApp({
      FORCE_HTTPS: 'true',
      TRUST_PROXY: 'loopback',
      PUBLIC_BASE_URL: 'https://api.example.com/',
    });
    try {
      const response = await t.http
        .get('/v1/datasets?limit=2')
        .set('Host', 'evil.example')
        .set('X-Forwarded-Proto', 'http');
      expect(response.status).toBe(308);
      expect(response.headers.location).toBe('https://api.example.com/v1/datasets?limit=2');
    } finally {
      await t.close();
    }
  });

  describe('serving HTTPS itself, with a plain-HTTP listener that redirects', () => {
    let certificate: { cert: string; key: string };
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'dss-tls-'));
      certificate = { cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
      await promisify(execFile)('openssl', [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-keyout',
        certificate.key,
        '-out',
        certificate.cert,
      ]);
    });
    afterAll(() => rm(dir, { recursive: true, force: true }));

    async function startWithRedirectPort(env: Record<string, string> = {}) {
      const redirectPort = await freePort();
      const app = await startTestApp(
        {
          TLS_CERT_FILE: certificate.cert,
          TLS_KEY_FILE: certificate.key,
          HTTP_REDIRECT_PORT: String(redirectPort),
          ...env,
        },
        { tls: true },
      );
      return { app, redirectPort };
    }

    /** A plain-HTTP GET on the redirect listener, with the Host header given. */
    function plainGet(port: number, path: string, host?: string, headers: Record<string, string> = {}) {
      return new Promise<{ status: number; location?: string; body: string }>((resolve, reject) => {
        http
          .get(
            { host: '127.0.0.1', port, path, headers: { ...headers, ...(host ? { Host: host } : {}) } },
            (response) => {
              let body = '';
              response.setEncoding('utf8').on('data', (part: string) => (body += part));
              response.on('end', () =>
                resolve({ status: response.statusCode ?? 0, location: response.headers.location, body }),
              );
            },
          )
          .on('error', reject);
      });
    }

    it('redirects to the HTTPS port, answers probes itself, and refuses a Host that is not a host', async () => {
      // A trusted proxy's X-Forwarded-Proto must not let a client of the plain listener through.
      const { app, redirectPort } = await startWithRedirectPort({ TRUST_PROXY: 'loopback' });
      try {
        await app.http.get('/health').expect(200);
        const port = new URL(app.url).port;
        const redirected = await plainGet(redirectPort, '/v1/datasets?limit=5');
        expect(redirected.status).toBe(308);
        expect(redirected.location).toBe(`https://127.0.0.1:${port}/v1/datasets?limit=5`);
        const named = await plainGet(redirectPort, '/v1/datasets', `api.example.com:${redirectPort}`);
        expect(named.location).toBe(`https://api.example.com:${port}/v1/datasets`);

        const forwarded = await plainGet(redirectPort, '/v1/datasets', undefined, {
          'X-Forwarded-Proto': 'https',
        });
        expect(forwarded.status).toBe(308);

        const probe = await plainGet(redirectPort, '/health');
        expect(probe.status).toBe(200);

        const steered = await plainGet(redirectPort, '/v1/datasets', 'user@evil.example');
        expect(steered.status).toBe(400);
        expect(JSON.parse(steered.body)).toMatchObject({ code: 'invalid_host' });
      } finally {
        await app.close();
      }
    });

    it('bounds slow clients and answers malformed requests with the error body on both listeners', async () => {
      const { app, redirectPort } = await startWithRedirectPort({
        HTTP_HEADERS_TIMEOUT_MS: '500',
        HTTP_REQUEST_TIMEOUT_MS: '1000',
      });
      const plain = `http://127.0.0.1:${redirectPort}`;
      try {
        for (const url of [app.url, plain]) {
          const stalled = await rawRequest(url, ['GET /health HTTP/1.1\r\nHo']);
          expect(stalled.status).toBe(408);
          expect(JSON.parse(stalled.body)).toMatchObject({
            code: 'request_timeout',
            details: { timeout_ms: 500 },
          });
          expect(stalled.elapsedMs).toBeGreaterThanOrEqual(400);
          expect(stalled.elapsedMs).toBeLessThan(2_500);
          // As the app's own answers: HSTS over TLS only.
          expect(stalled.headers['strict-transport-security']).toBe(
            url === plain ? undefined : 'max-age=31536000',
          );
          const malformed = await rawRequest(url, ['BREW / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n']);
          expect(malformed.status).toBe(400);
          expect(JSON.parse(malformed.body)).toMatchObject({ code: 'bad_request' });
        }
      } finally {
        await app.close();
      }
    });

    it('redirects to PUBLIC_BASE_URL when it is configured, whatever the Host header says', async () => {
      const { app, redirectPort } = await startWithRedirectPort({
        PUBLIC_BASE_URL: 'https://api.example.com',
      });
      try {
        const redirected = await plainGet(redirectPort, '/v1/datasets?limit=5', 'evil.example');
        expect(redirected.status).toBe(308);
        expect(redirected.location).toBe('https://api.example.com/v1/datasets?limit=5');
      } finally {
        await app.close();
      }
    });
  });
});
