// A worker script for test/worker-thread.e2e-spec.ts, served by the built `serveRequests`.
import { threadId } from 'node:worker_threads';
import { serveRequests } from '../../dist/common/threads/worker-thread.js';

await serveRequests(async () => ({
  info: { threadId },
  handle(request) {
    switch (request.op) {
      case 'echo':
        return request.value;
      case 'busy': {
        const end = Date.now() + request.ms;
        while (Date.now() < end); // holds the thread, as a model's run does
        return 'done';
      }
      case 'throw':
        throw new RangeError(request.message);
      case 'exit':
        process.exit(3); // ends this thread alone
    }
  },
}));
