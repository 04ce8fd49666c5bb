// A worker script for test/worker-thread.e2e-spec.ts, served by the built `serveRequests`.
import { threadId, workerData } from 'node:worker_threads';
import { serveRequests } from '../../dist/common/threads/worker-thread.js';

// `workerData.starts` (shared memory, when given) counts the starts, and a thread cannot start while
// `workerData.refuse[0]` is 1; `workerData.busy` counts the busy requests begun; a thread takes
// `workerData.startMs` to start.
await serveRequests(async () => {
  if (workerData?.starts) Atomics.add(workerData.starts, 0, 1);
  if (workerData?.startMs) await new Promise((resolve) => setTimeout(resolve, workerData.startMs));
  if (workerData?.refuse && Atomics.load(workerData.refuse, 0) === 1) throw new Error('cannot load');
  return { info: { threadId }, handle };
});

/** Requests of op `count` this thread has run. */
let counted = 0;

/** Answers a request of test/worker-thread.e2e-spec.ts. */
function handle(request) {
  switch (request.op) {
    case 'echo':
      return request.value;
    case 'count':
      return ++counted;
    case 'thread':
      return threadId;
    case 'alloc': {
      const held = []; // grows until the thread's heap limit ends the thread
      for (;;) held.push(new Array(1_000_000).fill(held.length));
    }
    case 'busy': {
      if (workerData?.busy) Atomics.add(workerData.busy, 0, 1);
      const end = Date.now() + request.ms;
      while (Date.now() < end); // holds the thread, as a model's run does
      return 'done';
    }
    case 'throw':
      throw new RangeError(request.message);
    case 'exit':
      process.exit(3); // ends this thread alone
  }
}
