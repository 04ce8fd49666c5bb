import { APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import {
  backoffMs,
  rateLimited,
  retryAfterMs,
  tooLarge,
  transient,
} from 'src/modules/embeddings/openai-refusals.js';

/** An error as the SDK makes it from an answer: `body` is the answer's JSON, or its text. */
function answer(status: number, body: unknown, headers: Record<string, string> = {}): APIError {
  const json = typeof body === 'string' ? undefined : (body as object);
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return APIError.generate(status, json, text, new Headers(headers));
}

describe('tooLarge', () => {
  it.each([
    [
      "OpenAI's input past the model's window",
      answer(400, {
        error: {
          message:
            "This model's maximum context length is 8192 tokens, however you requested 10240 tokens (10240 in your prompt; 0 for the completion). Please reduce your prompt; or completion length.",
          type: 'invalid_request_error',
        },
      }),
      { kind: 'input', keep: 0.8 },
    ],
    [
      "OpenAI's tokens per request",
      answer(400, {
        error: {
          message: 'Requested 453357 tokens, max 300000 tokens per request',
          type: 'max_tokens_per_request',
          code: 'max_tokens_per_request',
        },
      }),
      { kind: 'request' },
    ],
    [
      "Azure's inputs per request",
      answer(400, {
        error: {
          message:
            'Too many inputs. The max number of inputs is 16.  We hope to increase the number of inputs per request soon. Please contact us through an Azure support request at: https://go.microsoft.com/fwlink/?linkid=2213926 for further questions.',
          type: 'invalid_request_error',
        },
      }),
      { kind: 'inputs', maxInputs: 16 },
    ],
    [
      "vLLM's input past the model's window",
      answer(400, {
        error: {
          message:
            "This model's maximum context length is 512 tokens. However, you requested 1024 tokens in the input for embedding generation. Please reduce the length of the input.",
          type: 'BadRequestError',
        },
      }),
      { kind: 'input', keep: 0.5 },
    ],
    [
      "Ollama's input past the context",
      answer(400, { error: { message: 'the input length exceeds the context length' } }),
      { kind: 'input' },
    ],
    [
      "Text Embeddings Inference's batch size",
      answer(413, { error: 'batch size 64 > maximum allowed batch size 32', error_type: 'Validation' }),
      { kind: 'inputs', maxInputs: 32 },
    ],
    [
      "Text Embeddings Inference's input past the model's window",
      answer(413, {
        error: 'Input validation error: `inputs` must have less than 512 tokens. Given: 2048',
        error_type: 'Validation',
      }),
      { kind: 'input', keep: 0.25 },
    ],
    [
      "Text Embeddings Inference's batch size, from its OpenAI-compatible route",
      answer(413, {
        message: 'batch size 64 > maximum allowed batch size 32',
        code: 413,
        error_type: 'Validation',
      }),
      { kind: 'inputs', maxInputs: 32 },
    ],
    [
      "Text Embeddings Inference's payload limit, as text",
      answer(413, 'Failed to buffer the request body: length limit exceeded'),
      { kind: 'request' },
    ],
  ])('reads %s', (_, error, expected) => {
    expect(tooLarge(error)).toEqual(expected);
  });

  it.each([
    ['a 400 about something else', answer(400, { error: { message: "'$.input' is invalid." } })],
    ['a 500', answer(500, { error: { message: 'the input length exceeds the context length' } })],
    ['a 401', answer(401, { error: { message: 'Incorrect API key provided' } })],
    ['no answer', new APIConnectionTimeoutError()],
    ['another error', new Error('too long')],
  ])('is null for %s', (_, error) => {
    expect(tooLarge(error)).toBeNull();
  });
});

describe('rateLimited and transient', () => {
  it('tells a rate limit to wait out from a quota that waiting does not clear', () => {
    expect(
      rateLimited(answer(429, { error: { message: 'Rate limit reached', code: 'rate_limit_exceeded' } })),
    ).toBe('wait');
    expect(
      rateLimited(answer(429, { error: { message: 'You exceeded your quota', code: 'insufficient_quota' } })),
    ).toBe('quota');
    expect(rateLimited(answer(500, {}))).toBeNull();
  });

  it('retries what the SDK retries, unless the server says not to', () => {
    expect(transient(new APIConnectionTimeoutError())).toBe(true);
    for (const status of [408, 409, 500, 503]) expect(transient(answer(status, {}))).toBe(true);
    for (const status of [400, 401, 404, 422]) expect(transient(answer(status, {}))).toBe(false);
    expect(transient(answer(503, {}, { 'x-should-retry': 'false' }))).toBe(false);
    expect(transient(new APIUserAbortError())).toBe(false);
  });
});

describe('retryAfterMs', () => {
  it('reads retry-after-ms first, then retry-after in seconds or as a date', () => {
    expect(retryAfterMs(answer(429, {}, { 'retry-after-ms': '250.5', 'retry-after': '9' }))).toBe(250.5);
    expect(retryAfterMs(answer(429, {}, { 'retry-after': '2' }))).toBe(2_000);
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(retryAfterMs(answer(429, {}, { 'retry-after': 'Wed, 01 Jan 2025 00:00:07 GMT' }), now)).toBe(
      7_000,
    );
    expect(retryAfterMs(answer(429, {}))).toBeNull();
    expect(retryAfterMs(answer(429, {}, { 'retry-after': 'soon' }))).toBeNull();
  });

  it('backs off exponentially up to its cap, with up to a quarter of jitter', () => {
    for (let attempt = 0; attempt < 8; attempt++) {
      const expected = Math.min(500 * 2 ** attempt, 8_000);
      const delay = backoffMs(attempt);
      expect(delay).toBeGreaterThan(expected * 0.75 - 1e-9);
      expect(delay).toBeLessThanOrEqual(expected);
    }
  });
});
