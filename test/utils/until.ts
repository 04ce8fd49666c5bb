/**
 * Resolves once `done()` says so, asking every 10 ms. Without `timeoutMs` the test's own timeout bounds
 * the wait; with it, the wait fails on its own after that long.
 */
export async function until(done: () => boolean | Promise<boolean>, timeoutMs?: number): Promise<void> {
  const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
