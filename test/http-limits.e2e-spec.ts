import { rawRequest, type RawResponse } from './utils/raw-http.js';
import { type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

const HEADERS_TIMEOUT_MS = 600;
const REQUEST_TIMEOUT_MS = 1_500;
/** How late an answer may come after its bound: the listener's check interval, and a busy machine. */
const SLACK_MS = 2_000;

/** The contract's error body, and the headers of an answer the listener wrote itself. */
function expectRefusal(response: RawResponse, status: number, code: string): Record<string, unknown> {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
  expect(response.headers.connection).toBe('close');
  expect(response.headers['x-content-type-options']).toBe('nosniff');
  expect(Number(response.headers['content-length'])).toBe(Buffer.byteLength(response.body));
  const body = JSON.parse(response.body) as Record<string, unknown>;
  expect(body).toEqual({ error: expect.any(String), code, details: expect.any(Object) });
  return body;
}

describe('Slow clients, and requests Node.js refuses before the app sees them', () => {
  let t: TestApp;
  let key: CreatedKey;

  beforeAll(async () => {
    t = await startTestApp({
      HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    });
    key = await t.createApiKey();
  });
  afterAll(() => t.close());

  const createDataset = (contentLength: number, requestId: string) =>
    'POST /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
    `Authorization: Bearer ${key.api_key}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${contentLength}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n`;

  it('answers 408 request_timeout to a client that sends its headers and stalls its body', async () => {
    const response = await rawRequest(t.url, [createDataset(100, 'stalled-body'), '{"name": "Sta']);
    const body = expectRefusal(response, 408, 'request_timeout');
    expect(body.details).toEqual({ timeout_ms: REQUEST_TIMEOUT_MS });
    // The request had reached the app, which had named it.
    expect(response.headers['x-request-id']).toBe('stalled-body');
    expect(response.elapsedMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
    expect(response.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + SLACK_MS);
    const { rows } = await t.sql.query("SELECT count(*)::int AS n FROM datasets WHERE name LIKE 'Sta%'");
    expect(rows[0].n).toBe(0);
  });

  it.each([
    ['a partial header line', ['GET /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthoriz']],
    ['a partial request line', ['GET /v1/data']],
    ['nothing at all', []],
  ])('answers 408 request_timeout to a client that sends %s and stalls', async (_case, parts) => {
    const response = await rawRequest(t.url, parts);
    const body = expectRefusal(response, 408, 'request_timeout');
    expect(body.details).toEqual({ timeout_ms: HEADERS_TIMEOUT_MS });
    expect(response.headers['x-request-id']).toMatch(/^req_[0-9a-f-]{36}$/);
    expect(response.elapsedMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    expect(response.elapsedMs).toBeLessThan(HEADERS_TIMEOUT_MS + SLACK_MS);
  });

  it('takes a body that arrives slowly but steadily, past the headers timeout', async () => {
    const json = '{"name": "Trickled in"}';
    const pieces = json.match(/.{1,6}/g) ?? [];
    const response = await rawRequest(t.url, [createDataset(json.length, 'trickled'), ...pieces], {
      pauseMs: Math.ceil((HEADERS_TIMEOUT_MS * 1.5) / pieces.length),
    });
    expect(response.status).toBe(201);
    expect(response.elapsedMs).toBeGreaterThan(HEADERS_TIMEOUT_MS);
    expect(JSON.parse(response.body)).toMatchObject({ name: 'Trickled in' });
  });

  it('answers 431 headers_too_large to headers over the limit', async () => {
    const response = await rawRequest(t.url, [
      `GET /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`,
    ]);
    const body = expectRefusal(response, 431, 'headers_too_large');
    expect(body).toEqual({
      error: "The request's headers exceed 16384 bytes",
      code: 'headers_too_large',
      details: { limit_bytes: 16384 },
    });
    expect(response.elapsedMs).toBeLessThan(HEADERS_TIMEOUT_MS);
  });

  it.each([
    [
      'an unknown method',
      'BREW /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
      'Invalid method encountered',
    ],
    ['a malformed request line', 'GET /v1/datasets HTTP/9\r\nHost: 127.0.0.1\r\n\r\n', expect.any(String)],
    ['a header line without a colon', 'GET / HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n', expect.any(String)],
  ])('answers 400 bad_request to %s, and logs it', async (_case, request, issue) => {
    const response = await rawRequest(t.url, [request]);
    const body = expectRefusal(response, 400, 'bad_request');
    expect(body).toEqual({
      error: 'The request is not valid HTTP/1.1',
      code: 'bad_request',
      details: { issue },
    });
    const id = response.headers['x-request-id'];
    const output = await t.waitForOutput(`"req_id":"${id}"`);
    const line = output.split('\n').find((l) => l.includes(`"req_id":"${id}"`));
    expect(JSON.parse(line ?? '{}')).toMatchObject({
      status: 400,
      code: 'bad_request',
      msg: 'request refused by the HTTP listener',
    });
  });

  it('still serves requests on the same listener after refusing others', async () => {
    await t.http.get('/health').expect(200);
  });
});
