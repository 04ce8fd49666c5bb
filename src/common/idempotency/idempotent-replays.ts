import { Injectable } from '@nestjs/common';

/** The route metadata that names a route's replay check. */
export const IDEMPOTENT_REPLAY = 'idempotent_replay';

/** The route metadata that marks a route reading its body as it arrives, with the body's byte limit. */
export const IDEMPOTENT_STREAMED_BODY = 'idempotent_streamed_body';

/**
 * Checks a stored response before it is replayed (`@Idempotent({ replay: name })`): given the
 * account and the body as first answered, it returns the body to answer now. A route whose first
 * answer held something that may since have stopped being true, such as a secret that was rotated
 * or whose resource is gone, registers one, so that no replay hands it back.
 */
export type ReplayCheck = (accountId: string, body: unknown) => Promise<unknown>;

/** The replay checks, registered by the modules that own the routes they serve. */
@Injectable()
export class IdempotentReplays {
  private readonly checks = new Map<string, ReplayCheck>();

  register(name: string, check: ReplayCheck): void {
    if (this.checks.has(name)) throw new Error(`Replay check ${name} registered twice`);
    this.checks.set(name, check);
  }

  /** The body to replay; a route that names an unregistered check is a bug, not a client's fault. */
  apply(name: string, accountId: string, body: unknown): Promise<unknown> {
    const check = this.checks.get(name);
    if (!check) throw new Error(`No replay check ${name} is registered`);
    return check(accountId, body);
  }
}
