import { jest } from '@jest/globals';
import { EventEmitter } from 'node:events';
import type { CallHandler, ExecutionContext } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import { Subject } from 'rxjs';
import type { AppError } from 'src/common/errors/app-error.js';
import { InFlightRequests } from 'src/common/http/in-flight-requests.js';

/** A request through the middleware; `close()` closes its response, `handle()` starts its handler. */
function arrive(tracker: InFlightRequests) {
  const request = {} as Request;
  const response = new EventEmitter();
  let passed = false;
  let refusal: AppError | undefined;
  const next: NextFunction = (error?: unknown) => {
    if (error) refusal = error as AppError;
    else passed = true;
  };
  tracker.middleware(request, response as unknown as Response, next);
  return {
    passed: () => passed,
    refusal: () => refusal,
    close: () => response.emit('close'),
    handle() {
      const result = new Subject<unknown>();
      const context = {
        getType: () => 'http',
        switchToHttp: () => ({ getRequest: () => request }),
      } as unknown as ExecutionContext;
      tracker
        .intercept(context, { handle: () => result } as CallHandler)
        .subscribe({ error: () => undefined });
      return { finish: () => result.complete() };
    },
  };
}

function tracker(graceMs = 1_000) {
  const warnings: unknown[] = [];
  const logger = { warn: (...args: unknown[]) => warnings.push(args) } as unknown as Logger;
  return { inFlight: new InFlightRequests({ shutdownGraceMs: graceMs }, logger), warnings };
}

/** Whether `promise` has settled after the pending callbacks have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('InFlightRequests', () => {
  it('lets shutdown go on at once when nothing is under way', async () => {
    const { inFlight } = tracker();
    expect(await settled(inFlight.beforeApplicationShutdown())).toBe(true);
  });

  it('waits for a request until its response has closed and its handler has returned', async () => {
    const { inFlight } = tracker();
    const request = arrive(inFlight);
    const handler = request.handle();
    const shutdown = inFlight.beforeApplicationShutdown();
    request.close(); // the client has gone; the handler goes on
    expect(await settled(shutdown)).toBe(false);
    handler.finish();
    expect(await settled(shutdown)).toBe(true);
  });

  it('counts again a request whose handler starts after its client has gone', async () => {
    const { inFlight } = tracker();
    const request = arrive(inFlight);
    request.close(); // while the guards ran
    const handler = request.handle();
    const other = arrive(inFlight);
    const shutdown = inFlight.beforeApplicationShutdown();
    other.close();
    // Counted once each, the first handler still holds shutdown after the other request is done.
    expect(await settled(shutdown)).toBe(false);
    handler.finish();
    expect(await settled(shutdown)).toBe(true);
  });

  it('refuses requests with 503 once shutdown has begun', async () => {
    const { inFlight } = tracker();
    await inFlight.beforeApplicationShutdown();
    const late = arrive(inFlight);
    expect(late.passed()).toBe(false);
    expect(late.refusal()).toMatchObject({ status: 503, code: 'shutting_down' });
  });

  it('gives up after the grace time, and says how many requests were left', async () => {
    jest.useFakeTimers();
    try {
      const { inFlight, warnings } = tracker(20_000);
      arrive(inFlight);
      const shutdown = inFlight.beforeApplicationShutdown();
      jest.advanceTimersByTime(20_000);
      await shutdown;
      expect(warnings).toEqual([[{ requests: 1 }, 'shutting down with requests still under way']]);
    } finally {
      jest.useRealTimers();
    }
  });
});
