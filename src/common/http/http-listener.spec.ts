import { AppError } from 'src/common/errors/app-error.js';
import { type ClientError, clientErrorFor, rawErrorResponse } from 'src/common/http/http-listener.js';

const limits = { headersTimeoutMs: 10_000, requestTimeoutMs: 180_000, keepAliveTimeoutMs: 5_000 };
const parserError = (code: string, reason?: string): ClientError =>
  Object.assign(new Error(`Parse Error: ${reason}`), { code, reason });

describe('clientErrorFor', () => {
  it('names the timeout that ran out: the headers’, or the whole request’s once the app has it', () => {
    const timeout = Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
    expect(clientErrorFor(timeout, false, limits)).toMatchObject({
      status: 408,
      code: 'request_timeout',
      details: { timeout_ms: 10_000 },
    });
    expect(clientErrorFor(timeout, true, limits)).toMatchObject({
      status: 408,
      details: { timeout_ms: 180_000 },
    });
  });

  it('answers 431 for headers over the limit, and 400 with the parser’s reason for the rest', () => {
    expect(
      clientErrorFor(parserError('HPE_HEADER_OVERFLOW', 'Header overflow'), false, limits),
    ).toMatchObject({
      status: 431,
      code: 'headers_too_large',
      details: { limit_bytes: 16_384 },
    });
    expect(
      clientErrorFor(parserError('HPE_INVALID_METHOD', 'Invalid method encountered'), false, limits),
    ).toMatchObject({
      status: 400,
      code: 'bad_request',
      details: { issue: 'Invalid method encountered' },
    });
  });
});

describe('rawErrorResponse', () => {
  it('writes the contract’s body with its length, closing the connection, and the error’s own headers', () => {
    const error = new AppError(
      408,
      'request_timeout',
      'Too slow: “é”',
      { timeout_ms: 5 },
      { 'Retry-After': '1' },
    );
    const text = rawErrorResponse(error, 'req_1', true);
    const [head, body] = text.split('\r\n\r\n');
    expect(head.split('\r\n')).toEqual([
      'HTTP/1.1 408 Request Timeout',
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
      'X-Content-Type-Options: nosniff',
      'X-Request-Id: req_1',
      'Strict-Transport-Security: max-age=31536000',
      'Retry-After: 1',
    ]);
    expect(JSON.parse(body)).toEqual({
      error: 'Too slow: “é”',
      code: 'request_timeout',
      details: { timeout_ms: 5 },
    });
    expect(rawErrorResponse(error, 'req_1', false)).not.toContain('Strict-Transport-Security');
  });
});
