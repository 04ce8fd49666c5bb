import net from 'node:net';
import tls from 'node:tls';

export interface RawResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
  /** From the connection's opening to the server's closing it. */
  elapsedMs: number;
}

/**
 * Writes `parts` to a new connection to `url`, `pauseMs` apart, as bytes (no client library to fix
 * them up), and reads until the server closes it: for requests a client library would not send, or
 * would not send that slowly. `parts` may end mid-request, to stall there.
 */
export function rawRequest(
  url: string,
  parts: (string | Buffer)[],
  { pauseMs = 0 }: { pauseMs?: number } = {},
): Promise<RawResponse> {
  const { hostname, port, protocol } = new URL(url);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket =
      protocol === 'https:'
        ? tls.connect({ host: hostname, port: Number(port), rejectUnauthorized: false })
        : net.connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      try {
        resolve({
          ...parseResponse(Buffer.concat(chunks).toString('utf8')),
          elapsedMs: Date.now() - started,
        });
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
    socket.once(protocol === 'https:' ? 'secureConnect' : 'connect', () => {
      void (async () => {
        for (const [i, part] of parts.entries()) {
          if (i > 0 && pauseMs > 0) await new Promise((wait) => setTimeout(wait, pauseMs));
          if (socket.destroyed) return;
          socket.write(part);
        }
      })();
    });
  });
}

function parseResponse(text: string): Omit<RawResponse, 'elapsedMs'> {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`not an HTTP response: ${JSON.stringify(text)}`);
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const status = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1];
  if (!status) throw new Error(`not an HTTP status line: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(status), headers, body: text.slice(end + 4) };
}
