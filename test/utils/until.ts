/** Resolves once `done()` says so, asking every 10 ms (the test's own timeout bounds the wait). */
export async function until(done: () => Promise<boolean>): Promise<void> {
  while (!(await done())) await new Promise((resolve) => setTimeout(resolve, 10));
}
