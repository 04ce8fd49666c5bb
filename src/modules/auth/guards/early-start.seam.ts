import { Injectable, type Type } from '@nestjs/common';
import type { Request } from 'express';

/**
 * Work a route may begin as soon as its caller is known, while the rate limit is counted, access is
 * checked and the body is validated. It must be work whose loss costs little, since the request may
 * still be refused: `start` leaves it on the request for the handler, and nothing waits for it.
 */
export interface EarlyStart {
  start(request: Request): void;
}

/**
 * The early work routes declare (`@StartsEarly`), by its type. Its providers belong to the features,
 * which import auth, never the reverse: the application binds them here where it composes the two
 * (`AuthModule.bind` in app.module.ts), and EarlyStartGuard does not start without the work a route
 * declares.
 */
@Injectable()
export class EarlyStartSeam {
  private readonly work = new Map<Type<EarlyStart>, EarlyStart>();

  bind(type: Type<EarlyStart>, work: EarlyStart): void {
    this.work.set(type, work);
  }

  /** The work bound for `type`, or undefined when none is. */
  of(type: Type<EarlyStart>): EarlyStart | undefined {
    return this.work.get(type);
  }
}
