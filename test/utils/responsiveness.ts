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
