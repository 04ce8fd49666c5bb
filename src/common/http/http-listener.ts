import http, { type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { type AppError, CommonErrors, errorBody } from 'src/common/errors/app-error.js';
import { HSTS } from 'src/common/http/security-headers.middleware.js';
import { newRequestId } from 'src/common/logging/logger.js';
import type { HttpLimits } from 'src/common/http/http.config.js';

/** What Node.js passes to 'clientError': its parser's errors carry llhttp's code and reason. */
export type ClientError = Error & { code?: string; reason?: string };

export interface ListenerOptions {
  limits: HttpLimits;
  logger: Logger;
  /** The listener serves TLS, so its answers carry Strict-Transport-Security as the app's do. */
  secure: boolean;
}

/**
 * Bounds how long a client may take to send a request, and answers the requests Node.js refuses
 * before the app sees them with the contract's error body. Applied to every listener the app opens.
 */
export function configureListener(server: Server, options: ListenerOptions): void {
  const { limits } = options;
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  // No inactivity timeout: an MCP event stream or a search under way is quiet, not stalled, and the
  // two bounds above already end a client that stops sending.
  server.timeout = 0;
  // Node.js looks for expired requests on this interval (30 s by default, read when the listener
  // starts), which would stretch a 10 s bound to 40 s.
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(
    1_000,
    Math.max(25, Math.floor(limits.headersTimeoutMs / 10)),
  );

  // The response under way on each connection, if any: what decides whether an answer may be written.
  const responses = new WeakMap<Socket, ServerResponse>();
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    responses.set(socket, response);
    response.once('close', () => {
      if (responses.get(socket) === response) responses.delete(socket);
    });
  });
  server.on('clientError', (error: ClientError, socket: Socket) =>
    answerClientError(error, socket, responses.get(socket), options),
  );
}

/**
 * The answer to a request the HTTP parser or the listener's timeouts refused. `inFlight`: the request
 * reached the app (its headers were read) and its body had not all come.
 */
export function clientErrorFor(error: ClientError, inFlight: boolean, limits: HttpLimits): AppError {
  if (error.code === 'HPE_HEADER_OVERFLOW') return CommonErrors.headersTooLarge(http.maxHeaderSize);
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return inFlight
      ? CommonErrors.requestTimeout('request', limits.requestTimeoutMs)
      : CommonErrors.requestTimeout('headers', limits.headersTimeoutMs);
  }
  return CommonErrors.badRequest(error.reason ?? error.message);
}

/** An error as a whole HTTP/1.1 response, written to the socket itself, as the app's filter would. */
export function rawErrorResponse(error: AppError, requestId: string, secure: boolean): string {
  const body = JSON.stringify(errorBody(error));
  const headers: Record<string, string> = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
    'X-Content-Type-Options': 'nosniff',
    'X-Request-Id': requestId,
    ...(secure ? { 'Strict-Transport-Security': HSTS } : {}),
    ...error.headers,
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\n${lines.join('')}\r\n${body}`;
}

/**
 * Writes the answer where Node.js itself would: on a socket still writable, that the client did not
 * reset, and whose response has not started (which a second one would corrupt).
 */
function answerClientError(
  error: ClientError,
  socket: Socket,
  response: ServerResponse | undefined,
  { limits, logger, secure }: ListenerOptions,
): void {
  if (error.code === 'ECONNRESET' || !socket.writable || response?.headersSent) {
    socket.destroy();
    return;
  }
  const refused = clientErrorFor(error, response !== undefined, limits);
  // A request that reached the app already has its id (the request logger gave it one).
  const given = response?.getHeader('X-Request-Id');
  const id = typeof given === 'string' ? given : newRequestId();
  logger.warn(
    {
      req_id: id,
      status: refused.status,
      code: refused.code,
      cause: error.code,
      remote_address: socket.remoteAddress,
    },
    'request refused by the HTTP listener',
  );
  socket.end(rawErrorResponse(refused, id, secure), () => socket.destroy());
}
