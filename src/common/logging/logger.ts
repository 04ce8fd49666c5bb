import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import { pino, type Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import pinoPretty from 'pino-pretty';
import type { LoggingConfig } from 'src/common/logging/logging.config.js';

export const LOGGER = Symbol('LOGGER');

/** Credentials never reach the logs: these paths are replaced before a line is written. */
const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["idempotency-key"]',
  'res.headers["set-cookie"]',
  'api_key',
  '*.api_key',
];

type LoggerSettings = LoggingConfig;

/**
 * LOG_FORMAT when set; otherwise readable lines for a person at a terminal in development, and JSON
 * lines wherever a program reads them (a pipe, a file, a log collector, production, the tests).
 */
export function logFormat(config: Pick<LoggerSettings, 'format' | 'nodeEnv'>, stdoutIsTty: boolean) {
  return config.format ?? (config.nodeEnv === 'development' && stdoutIsTty ? 'pretty' : 'json');
}

export function createLogger(config: LoggerSettings, stdoutIsTty = Boolean(process.stdout.isTTY)): Logger {
  const options = {
    level: config.level,
    base: { service: 'dataset-search' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  if (logFormat(config, stdoutIsTty) === 'json') return pino(options);
  // In process and synchronous: a line written just before the process exits is not lost.
  return pino(
    options,
    pinoPretty({ sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service' }),
  );
}

/** A client may name its request (for tracing across services); anything else gets a fresh id. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The id of a request that did not name itself. */
export function newRequestId(): string {
  return `req_${randomUUID()}`;
}

export function requestId(req: IncomingMessage, res: ServerResponse): string {
  const given = req.headers['x-request-id'];
  const id = typeof given === 'string' && CLIENT_REQUEST_ID.test(given) ? given : newRequestId();
  res.setHeader('X-Request-Id', id);
  return id;
}

/** One structured JSON line per request, carrying the request id; also assigns `req.id`. */
export function requestLogger(logger: Logger) {
  return pinoHttp({
    logger,
    genReqId: requestId,
    customLogLevel: (_req, res, err) => {
      if (err) return 'error';
      // 503 says "later" (shutting down, a dependency not ready, the embedder failing): a warning.
      if (res.statusCode >= 500 && res.statusCode !== 503) return 'error';
      return res.statusCode >= 400 ? 'warn' : 'info';
    },
    serializers: {
      req: (req: { id: string; method: string; url: string; remoteAddress?: string }) => ({
        id: req.id,
        method: req.method,
        url: req.url.replace(/([?&]access_token=)[^&]*/i, '$1[redacted]'),
        remote_address: req.remoteAddress,
      }),
      res: (res: { statusCode: number }) => ({ status: res.statusCode }),
    },
  });
}

/** Routes Nest's own log lines (boot, route map, errors) through the same JSON logger. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Logger) {}

  log(message: unknown, context?: string) {
    this.logger.info({ context }, String(message));
  }
  error(message: unknown, trace?: string, context?: string) {
    this.logger.error({ context, trace }, String(message));
  }
  warn(message: unknown, context?: string) {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string) {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string) {
    this.logger.trace({ context }, String(message));
  }
}
