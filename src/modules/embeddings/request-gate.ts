import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Paces the requests of one remote provider after it answered 429: every request waits out the pause
 * the answer asked for (not only the one refused), and fewer go at once for a while (the allowance is
 * halved, then grows back by one with each request that succeeds), so that a rate limit is not met
 * again by the requests already queued.
 */
export class RequestGate {
  private allowed: number;
  private active = 0;
  private pausedUntil = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly most: number) {
    this.allowed = most;
  }

  /** Resolves when a request may go; `leave` must follow, whatever its outcome. */
  async enter(): Promise<void> {
    for (;;) {
      const pause = this.pausedUntil - Date.now();
      if (pause > 0) await sleep(pause);
      else if (this.active < this.allowed) {
        this.active++;
        return;
      } else await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  leave(): void {
    this.active--;
    this.wake();
  }

  succeeded(): void {
    if (this.allowed < this.most) this.allowed++;
    this.wake();
  }

  /** A 429: no request goes for `ms`, and half as many at once afterwards. Whether it starts a pause. */
  limited(ms: number): boolean {
    this.allowed = Math.max(1, Math.floor(this.allowed / 2));
    const until = Date.now() + ms;
    const starts = this.pausedUntil <= Date.now();
    this.pausedUntil = Math.max(this.pausedUntil, until);
    return starts;
  }

  /** The requests in flight and the allowance, for tests. */
  state(): { active: number; allowed: number } {
    return { active: this.active, allowed: this.allowed };
  }

  private wake(): void {
    for (const resolve of this.waiting.splice(0, Math.max(0, this.allowed - this.active))) resolve();
  }
}
