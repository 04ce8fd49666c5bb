import {
  type BeforeApplicationShutdown,
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { finalize, type Observable } from 'rxjs';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { CORE_CONFIG, type CoreConfig } from 'src/config/core.config.js';

const TICKET = Symbol('in-flight request');

/**
 * A request's hold on shutdown, from its arrival until its response has closed and its handler, if
 * it ran, has returned: a handler goes on after its client has gone, and still needs the pools. A
 * handler that starts after its client has gone (who left while the guards ran) counts the request
 * again.
 */
class Ticket {
  private holds = 1; // the response's

  constructor(
    private readonly enter: () => void,
    private readonly leave: () => void,
  ) {
    enter();
  }

  /** Holds the request until the returned function is called (once; later calls do nothing). */
  hold(): () => void {
    if (this.holds++ === 0) this.enter();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.release();
    };
  }

  release(): void {
    if (--this.holds === 0) this.leave();
  }
}

type Holding = Request & { [TICKET]?: Ticket };

/**
 * The requests this process is still answering. On shutdown (`beforeApplicationShutdown`, which Nest
 * runs before the HTTP server closes and before the pools and the model threads are closed in
 * `onApplicationShutdown`) new requests are refused with 503 `shutting_down`, and those under way
 * are given up to `SHUTDOWN_GRACE_SECONDS` to finish, whether their clients still wait or not. (Nest's
 * own order waits only for connections still open, so a handler whose client had gone found its pool
 * closed, and new connections were refused outright rather than told to retry.)
 */
@Injectable()
export class InFlightRequests implements NestInterceptor, BeforeApplicationShutdown {
  private count = 0;
  private closing = false;
  private onDrained: (() => void) | null = null;

  constructor(
    @Inject(CORE_CONFIG) private readonly config: Pick<CoreConfig, 'shutdownGraceMs'>,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Middleware: counts each request until its response closes, or refuses it when closing. */
  readonly middleware = (request: Request, response: Response, next: NextFunction): void => {
    if (this.closing) return next(CommonErrors.shuttingDown());
    const ticket = new Ticket(
      () => this.count++,
      () => this.leave(),
    );
    (request as Holding)[TICKET] = ticket;
    response.once('close', () => ticket.release());
    next();
  };

  /** Holds the request's ticket for as long as its handler runs. */
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const ticket =
      context.getType() === 'http' ? context.switchToHttp().getRequest<Holding>()[TICKET] : undefined;
    if (!ticket) return next.handle();
    return next.handle().pipe(finalize(ticket.hold()));
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    if (this.count === 0) return;
    const left = await new Promise<number>((resolve) => {
      const timer = setTimeout(() => resolve(this.count), this.config.shutdownGraceMs);
      this.onDrained = () => {
        clearTimeout(timer);
        resolve(0);
      };
    });
    if (left > 0) this.logger.warn({ requests: left }, 'shutting down with requests still under way');
  }

  private leave(): void {
    if (--this.count === 0) this.onDrained?.();
  }
}
