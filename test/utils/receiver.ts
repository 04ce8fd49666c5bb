import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as it arrived. */
  raw: string;
  body: { id: string; event: string; timestamp: string; data: Record<string, unknown> };
}

/** What the receiver answers a request with: a status (and body), or a wait first. */
export type Answer = { status: number; body?: string; headers?: Record<string, string>; delayMs?: number };

/**
 * A webhook receiver on 127.0.0.1, as a team would run one: it records every request as it arrived
 * and answers as the test says (`answer`, 200 by default).
 */
export class Receiver {
  readonly received: Received[] = [];
  answer: (request: Received) => Answer = () => ({ status: 200 });
  private server: Server | null = null;
  port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(port = 0): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const received: Received = {
          path: request.url ?? '',
          headers: request.headers,
          raw,
          body: raw ? (JSON.parse(raw) as Received['body']) : (undefined as never),
        };
        this.received.push(received);
        const answer = this.answer(received);
        setTimeout(() => {
          if (response.destroyed) return;
          response.writeHead(answer.status, answer.headers).end(answer.body ?? '');
        }, answer.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }

  /** Requests of one event type, in arrival order. */
  of(event: string): Received[] {
    return this.received.filter((r) => r.body?.event === event);
  }
}
