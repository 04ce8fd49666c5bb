import { Inject, Injectable } from '@nestjs/common';
import type pg from 'pg';
import { SEARCH_CONFIG, type SearchConfig } from 'src/modules/search/search.config.js';
import type { Read } from 'src/database/read.js';
import { SearchErrors } from 'src/modules/search/search.errors.js';
import { SearchPool } from 'src/modules/search/search-pool.js';

const QUERY_CANCELED = '57014';

/** A statement cancelled (by its timeout, or at the search's deadline) becomes 504 query_timeout. */
function timeoutOr(error: unknown, timeoutMs: number): unknown {
  return (error as { code?: string } | null)?.code === QUERY_CANCELED
    ? SearchErrors.timeout(timeoutMs)
    : error;
}

/**
 * How a search's statements reach the database: on the search pool (see `SearchPool`), each on its own
 * (`statements`) or in a read-only transaction (`transaction`), watched by the search's deadline. The
 * statements a search still runs at its deadline are cancelled in the database rather than left running
 * after the client has been answered.
 */
@Injectable()
export class SearchReads {
  private readonly pool: pg.Pool;
  private readonly timeoutMs: number;

  constructor(
    private readonly search: SearchPool,
    @Inject(SEARCH_CONFIG) config: Pick<SearchConfig, 'timeoutMs'>,
  ) {
    this.pool = search.pool;
    this.timeoutMs = config.timeoutMs;
  }

  /**
   * Statements each on their own: their own snapshot, one round trip. When `deadline` aborts, the
   * statement under way is cancelled in PostgreSQL and no further one starts.
   */
  statements(deadline?: AbortSignal): Read {
    return async <T>(text: string, values?: unknown[]) => {
      const { client, release } = await this.checkout(deadline);
      let failed = false;
      try {
        return (await client.query(text, values)).rows as T[];
      } catch (error) {
        failed = true;
        throw timeoutOr(error, this.timeoutMs);
      } finally {
        // As pg's own pool.query does, a connection whose statement failed is not reused.
        release(failed);
      }
    };
  }

  /**
   * Runs `work` in a read-only transaction of its own, with the given settings for its length. It is
   * opened and configured in one round trip; the settings are the code's own numbers, never a
   * caller's input. When `deadline` aborts, the statement under way is cancelled (as in `statements`).
   */
  async transaction<T>(
    isolation: 'READ COMMITTED' | 'REPEATABLE READ',
    work: (read: Read) => Promise<T>,
    { deadline, settings = {} }: { deadline?: AbortSignal; settings?: Record<string, number | string> },
  ): Promise<T> {
    // A connection whose statement was cancelled, or that cannot even end its transaction, is closed
    // rather than handed to the next search.
    const { client, release } = await this.checkout(deadline);
    const read: Read = async <R>(text: string, values?: unknown[]) => {
      deadline?.throwIfAborted();
      return (await client.query(text, values)).rows as R[];
    };
    let result: T;
    try {
      await client.query(
        [
          `BEGIN ISOLATION LEVEL ${isolation} READ ONLY`,
          ...Object.entries(settings).map(([name, value]) => `SET LOCAL ${name} = ${value}`),
        ].join('; '),
      );
      result = await work(read);
    } catch (error) {
      await client.query('ROLLBACK').then(
        () => release(false),
        () => release(true),
      );
      throw timeoutOr(error, this.timeoutMs);
    }
    // The transaction only read, so the answer need not wait for its COMMIT; the connection goes back
    // to the pool once that is done.
    void client.query('COMMIT').then(
      () => release(false),
      () => release(true),
    );
    return result;
  }

  /**
   * A connection of the search pool, watched by `deadline`: when it aborts, the connection's statement
   * is cancelled in PostgreSQL. Nothing more of the search starts once the deadline has passed, even
   * on a connection that only came free after it (the pool is full exactly when searches run long).
   * `release` stops watching and gives the connection back; one whose statement failed (`failed`) or
   * was cancelled is closed rather than reused, as the cancellation may still be on its way (see
   * `SearchPool.cancel`).
   */
  private async checkout(
    deadline?: AbortSignal,
  ): Promise<{ client: pg.PoolClient; release: (failed: boolean) => void }> {
    deadline?.throwIfAborted();
    const client = await this.pool.connect();
    if (deadline?.aborted) {
      client.release();
      deadline.throwIfAborted();
    }
    let cancelled = false;
    const cancel = () => {
      cancelled = true;
      this.search.cancel(client);
    };
    deadline?.addEventListener('abort', cancel, { once: true });
    const release = (failed: boolean) => {
      deadline?.removeEventListener('abort', cancel);
      client.release(cancelled || failed);
    };
    return { client, release };
  }
}
