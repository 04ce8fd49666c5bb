import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';

export interface FakeOpenAI {
  baseUrl: string;
  /** Every input text the server was asked to embed, in order. */
  inputs: string[];
  /** Each request's input texts, in the order the requests came. */
  requests: string[][];
  /** Milliseconds each request waits before answering (settable while running). */
  delayMs: number;
  /** Chosen vectors for chosen texts; any other text gets a deterministic pseudo-random vector. */
  vectors: Map<string, number[]>;
  /** Texts whose request the server answers with 500. */
  failing: Set<string>;
  /** A request with a text this accepts is never answered (its client hangs until it goes away). */
  hangs: (text: string) => boolean;
  /** A request with a text this accepts waits, until `release` answers it as any other. */
  holds: (text: string) => boolean;
  /** Answers the requests held so far, and holds no more. */
  release(): void;
  /** Dimensions by model name, for a server that serves several (`startFakeOpenAI`'s for the others). */
  dimensionsOf: Record<string, number>;
  /** The `data` sent for a request, from the one the server made (to send malformed answers). */
  reshape: (data: { object: string; index: number; embedding: number[] }[]) => unknown;
  /** Each request's number of inputs and the status it was answered with, in the order they came. */
  answers: { inputs: number; status: number }[];
  /** Requests received and not yet answered (nor given up by their client). */
  inFlight: number;
  /** The most requests in flight at once so far (settable, to start counting again). */
  mostInFlight: number;
  /** Answers the next `count` requests 429, with `headers` (`retry-after`, `retry-after-ms`). */
  rateLimit(count: number, headers?: Record<string, string>): void;
  /**
   * A server's limits, refused as OpenAI-compatible servers do (tokens counted as four characters
   * each): more inputs than `maxInputs` as Azure (400 "Too many inputs. The max number of inputs is
   * N."), more tokens in all than `maxRequestTokens` as OpenAI (400 `max_tokens_per_request`), an input
   * longer than `maxInputTokens` as vLLM (400 "maximum context length is N tokens").
   */
  limits: { maxInputs?: number; maxRequestTokens?: number; maxInputTokens?: number };
  close(): Promise<void>;
}

/** The fake's tokens of a text: about four characters each, as OpenAI's tokenizers read English. */
export function fakeTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** What the fake refuses a request for, as a server would say it, or null. */
function refusal(texts: string[], limits: FakeOpenAI['limits']): { message: string; code?: string } | null {
  const { maxInputs, maxRequestTokens, maxInputTokens } = limits;
  if (maxInputs !== undefined && texts.length > maxInputs)
    return {
      message: `Too many inputs. The max number of inputs is ${maxInputs}.  We hope to increase the number of inputs per request soon.`,
    };
  const tokens = texts.reduce((sum, text) => sum + fakeTokens(text), 0);
  if (maxRequestTokens !== undefined && tokens > maxRequestTokens)
    return {
      message: `Requested ${tokens} tokens, max ${maxRequestTokens} tokens per request`,
      code: 'max_tokens_per_request',
    };
  const longest = Math.max(...texts.map(fakeTokens));
  if (maxInputTokens !== undefined && longest > maxInputTokens)
    return {
      message:
        `This model's maximum context length is ${maxInputTokens} tokens. However, you requested ${longest} ` +
        'tokens in the input for embedding generation. Please reduce the length of the input.',
    };
  return null;
}

/** `x` scaled to length 1: a vector chosen for a text, as a model's are. */
export function unitVector(x: number[]): number[] {
  const norm = Math.hypot(...x);
  return x.map((y) => y / norm);
}

/** A pseudo-random unit vector derived from the text, so the same text always embeds the same. */
export function hashVector(text: string, dimensions: number): number[] {
  const values: number[] = [];
  for (let i = 0; values.length < dimensions; i++) {
    const digest = createHash('sha256').update(`${i}:${text}`).digest();
    for (let j = 0; j + 1 < digest.length && values.length < dimensions; j += 2)
      values.push(digest.readInt16BE(j) / 32768);
  }
  const norm = Math.sqrt(values.reduce((sum, x) => sum + x * x, 0));
  return values.map((x) => x / norm);
}

/** The server's environment for embedding through `openai` (the service's OpenAI-compatible provider). */
export function openAiEnv(openai: FakeOpenAI): Record<string, string> {
  return {
    EMBEDDING_PROVIDER: 'openai',
    OPENAI_API_KEY: 'test-key',
    OPENAI_BASE_URL: openai.baseUrl,
    EMBEDDING_MODEL: 'fake-embedder',
  };
}

/**
 * An OpenAI-compatible embeddings endpoint on 127.0.0.1 (`POST /v1/embeddings`), for tests: the
 * service's real OpenAI provider talks to it through the official SDK.
 */
export async function startFakeOpenAI(dimensions = 8): Promise<FakeOpenAI> {
  const held: (() => void)[] = [];
  const state: Omit<FakeOpenAI, 'baseUrl' | 'close'> = {
    inputs: [],
    requests: [],
    delayMs: 0,
    vectors: new Map(),
    failing: new Set(),
    hangs: () => false,
    holds: () => false,
    release: () => {
      state.holds = () => false;
      for (const answer of held.splice(0)) answer();
    },
    dimensionsOf: {},
    reshape: (data) => data,
    answers: [],
    inFlight: 0,
    mostInFlight: 0,
    rateLimit: (count, headers = {}) => {
      limited = { count, headers };
    },
    limits: {},
  };
  let limited = { count: 0, headers: {} as Record<string, string> };
  // Delayed answers not yet sent: closing the server cancels them, or a long delay would keep Jest's
  // process alive after the last test ("Jest did not exit one second after the test run").
  const pending = new Set<NodeJS.Timeout>();
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/embeddings') {
        response.writeHead(404).end();
        return;
      }
      const { input, model } = JSON.parse(body) as { input: string | string[]; model: string };
      const texts = Array.isArray(input) ? input : [input];
      state.inputs.push(...texts);
      state.requests.push(texts);
      const answer = { inputs: texts.length, status: 200 };
      state.answers.push(answer);
      state.inFlight++;
      state.mostInFlight = Math.max(state.mostInFlight, state.inFlight);
      response.on('close', () => state.inFlight--);
      const fail = (status: number, error: object, headers: Record<string, string> = {}) => {
        answer.status = status;
        response.writeHead(status, { 'Content-Type': 'application/json', ...headers });
        response.end(JSON.stringify({ error }));
      };
      if (texts.some((text) => state.failing.has(text))) {
        fail(500, { message: 'injected failure', type: 'server_error' });
        return;
      }
      if (limited.count > 0) {
        limited.count--;
        fail(
          429,
          { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
          limited.headers,
        );
        return;
      }
      const refused = refusal(texts, state.limits);
      if (refused) {
        fail(400, { type: 'invalid_request_error', param: null, code: null, ...refused });
        return;
      }
      if (texts.some((text) => state.hangs(text))) return;
      const size = state.dimensionsOf[model] ?? dimensions;
      const data = texts.map((text, index) => ({
        object: 'embedding',
        index,
        embedding: state.vectors.get(text) ?? hashVector(text, size),
      }));
      const send = () => {
        const timer = setTimeout(() => {
          pending.delete(timer);
          response.writeHead(200, { 'Content-Type': 'application/json' });
          response.end(
            JSON.stringify({
              object: 'list',
              data: state.reshape(data),
              model,
              usage: { prompt_tokens: 0, total_tokens: 0 },
            }),
          );
        }, state.delayMs);
        pending.add(timer);
      };
      if (texts.some((text) => state.holds(text))) held.push(send);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return Object.assign(state, {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of pending) clearTimeout(timer);
        pending.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
