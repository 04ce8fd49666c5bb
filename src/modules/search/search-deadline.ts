import { setMaxListeners } from 'node:events';
import { withDeadline } from 'src/common/async/deadline.js';
import { SearchErrors } from 'src/modules/search/search.errors.js';

/**
 * A request's whole answer within the search timeout (`timeoutMs`), else 504 query_timeout. At the
 * deadline `work`'s signal aborts, which cancels its statements still running in PostgreSQL (see
 * `SearchReads`); each statement's own timeout is the backstop. It aborts as well when `work` fails:
 * the rest of a batch (or an evaluation) whose answer is already an error stops too.
 */
export function withinSearchDeadline<T>(
  timeoutMs: number,
  work: (deadline: AbortSignal) => Promise<T>,
): Promise<T> {
  const deadline = new AbortController();
  // One listener for each statement under way, and a batch runs several queries of two legs each.
  setMaxListeners(0, deadline.signal);
  const answer = work(deadline.signal).catch((error: unknown) => {
    deadline.abort(error);
    throw error;
  });
  return withDeadline(answer, timeoutMs, () => {
    const error = SearchErrors.timeout(timeoutMs);
    deadline.abort(error);
    return error;
  });
}
