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
  close(): Promise<void>;
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
  };
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
      if (texts.some((text) => state.failing.has(text))) {
        response.writeHead(500, { 'Content-Type': 'application/json' });
        response.end(JSON.stringify({ error: { message: 'injected failure', type: 'server_error' } }));
        return;
      }
      if (texts.some((text) => state.hangs(text))) return;
      const size = state.dimensionsOf[model] ?? dimensions;
      const data = texts.map((text, index) => ({
        object: 'embedding',
        index,
        embedding: state.vectors.get(text) ?? hashVector(text, size),
      }));
      const answer = () => {
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
      if (texts.some((text) => state.holds(text))) held.push(answer);
      else answer();
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
