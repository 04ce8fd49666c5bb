import { readFileSync } from 'node:fs';
import type { TestApp } from './test-app.js';

/** The first `count` abstracts of BEIR SciFact, as paragraphs of one text: real prose, many chunks. */
export function scifactAbstracts(count: number): string {
  return readFileSync('../shared/datasets/scifact/corpus.jsonl', 'utf8')
    .split('\n', count)
    .map((line) => (JSON.parse(line) as { text: string }).text)
    .join('\n\n');
}

/**
 * Runs `work` while asking the app's GET /health again and again, one request at a time: how long the
 * slowest answer took, and the work, in ms.
 */
export async function healthWhile<T>(
  app: TestApp,
  work: () => Promise<T>,
): Promise<{ result: T; slowestMs: number; elapsedMs: number }> {
  const started = performance.now();
  let done = false;
  const running = work().finally(() => (done = true));
  let slowestMs = 0;
  try {
    while (!done) {
      const sent = performance.now();
      await app.http.get('/health').expect(200);
      slowestMs = Math.max(slowestMs, performance.now() - sent);
    }
  } finally {
    // Never left running past the test, whatever failed.
    await running.catch(() => undefined);
  }
  const result = await running;
  return { result, slowestMs, elapsedMs: performance.now() - started };
}

/**
 * Runs `work` while a timer ticks every 5 ms: the longest the event loop went without turning, and the
 * work's time, in ms. The loop turns once more after the work, so that a stall at its very end counts
 * too (a histogram of the loop's delay, read at once, would miss a stall as long as the whole work).
 */
export async function longestStall<T>(
  work: () => Promise<T>,
): Promise<{ result: T; stallMs: number; elapsedMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const tick = () => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  };
  const timer = setInterval(tick, 5);
  try {
    const started = performance.now();
    const result = await work();
    const elapsedMs = performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 10));
    tick();
    return { result, stallMs, elapsedMs };
  } finally {
    clearInterval(timer);
  }
}
