import { APIConnectionError, APIError, APIUserAbortError } from 'openai';

/**
 * A request an OpenAI-compatible server refused as too large, by what it says was too large: the
 * number of inputs, the request's tokens (or bytes) in all, or one input. Servers word it differently:
 *
 * - OpenAI: 400 `This model's maximum context length is 8192 tokens, however you requested 9000
 *   tokens …` (one input); 400 `max_tokens_per_request`, `Requested 453357 tokens, max 300000 tokens
 *   per request`.
 * - Azure OpenAI: 400 `Too many inputs. The max number of inputs is 16. …`.
 * - vLLM: 400 `This model's maximum context length is 512 tokens. However, you requested 1451 tokens
 *   in the input for embedding generation. …`.
 * - Ollama: 400 `the input length exceeds the context length`.
 * - Text Embeddings Inference: 413 `batch size 64 > maximum allowed batch size 32`, 413 `Input
 *   validation error: \`inputs\` must have less than 512 tokens. Given: 600`, and 413 `Failed to
 *   buffer the request body: length limit exceeded` past its payload limit (2 MB by default).
 */
export interface TooLarge {
  kind: 'inputs' | 'request' | 'input';
  /** The most inputs a request may hold, when the server says. */
  maxInputs?: number;
  /** The share of an input the server takes, when it gives the limit and the input's tokens. */
  keep?: number;
}

const TOO_MANY_INPUTS = /too many inputs|number of inputs|batch size/i;
const REQUEST_TOO_LARGE = /tokens per request|max_tokens_per_request|length limit exceeded|too large/i;
const INPUT_TOO_LONG =
  /context length|context window|maximum (?:input )?length|too long|too many tokens|must have less than \d+ tokens/i;
/** "maximum context length is 512 tokens. However, you requested 1451 tokens"; TEI's "less than 512 tokens. Given: 600". */
const INPUT_LIMIT = /(?:length is|less than) (\d+) tokens\b.*?(?:requested|given:?) (\d+)/is;

/** An answer's error with its status and headers typed (`instanceof` alone leaves them `any`). */
function answered(error: unknown): APIError<number, Headers> | null {
  if (!(error instanceof APIError)) return null;
  const typed = error as APIError;
  return typed.status === undefined || !typed.headers ? null : (typed as APIError<number, Headers>);
}

export function tooLarge(failure: unknown): TooLarge | null {
  const error = answered(failure);
  if (!error || ![400, 413, 422].includes(error.status)) return null;
  // The SDK's message starts with the status, which is no limit.
  const message = `${error.message.replace(/^\d{3} /, '')} ${error.code ?? ''}`;
  if (TOO_MANY_INPUTS.test(message)) return { kind: 'inputs', maxInputs: smallestNumber(message) };
  if (REQUEST_TOO_LARGE.test(message)) return { kind: 'request' };
  if (INPUT_TOO_LONG.test(message)) {
    const [, limit, given] = INPUT_LIMIT.exec(message) ?? [];
    const keep = limit && given ? Number(limit) / Number(given) : undefined;
    return { kind: 'input', ...(keep && keep < 1 ? { keep } : {}) };
  }
  // 413 is "Payload Too Large" whatever its body says.
  return error.status === 413 ? { kind: 'request' } : null;
}

/** The smallest number a message gives above zero (a limit of inputs; the message's other numbers are larger). */
function smallestNumber(message: string): number | undefined {
  const numbers = [...message.matchAll(/\d+/g)].map(([digits]) => Number(digits)).filter((n) => n > 0);
  return numbers.length > 0 ? Math.min(...numbers) : undefined;
}

/** A 429: a rate limit that waiting clears, or (OpenAI's `insufficient_quota`) a quota that it does not. */
export function rateLimited(failure: unknown): 'wait' | 'quota' | null {
  const error = answered(failure);
  if (error?.status !== 429) return null;
  return error.code === 'insufficient_quota' ? 'quota' : 'wait';
}

/** What the OpenAI SDK retries besides 429s: no answer, a timeout, 408, 409 (a lock) and 5xx. */
export function transient(failure: unknown): boolean {
  if (failure instanceof APIUserAbortError) return false;
  if (failure instanceof APIConnectionError) return true;
  const error = answered(failure);
  if (!error || error.headers.get('x-should-retry') === 'false') return false;
  return error.status === 408 || error.status === 409 || error.status >= 500;
}

/**
 * The wait an answer asks for, in milliseconds: `retry-after-ms` (OpenAI's), else `retry-after` in
 * seconds or as an HTTP date; null when it gives none.
 */
export function retryAfterMs(failure: unknown, now = Date.now()): number | null {
  const headers = answered(failure)?.headers;
  const ms = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers?.get('retry-after')?.trim();
  if (!value) return null;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** Exponential backoff with jitter, as the SDK's: 0.5 s doubled per attempt up to `capMs`, less up to a quarter. */
export function backoffMs(attempt: number, capMs = 8_000): number {
  return Math.min(500 * 2 ** attempt, capMs) * (1 - 0.25 * Math.random());
}
