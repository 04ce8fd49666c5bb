import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import pg from 'pg';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { DATABASE_CONFIG, type DatabaseConfig } from 'src/database/database.config.js';
import { SEARCH_CONFIG, type SearchConfig } from 'src/modules/search/search.config.js';
import { cancelStatement } from 'src/database/cancel-request.js';

/** `hnsw.ef_search` of every search session: the fewest candidates a leg takes (see SearchService). */
export const SESSION_EF_SEARCH = 50;
/** How far pgvector's iterative scan may walk the shared HNSW graph before giving up (default 20,000). */
const HNSW_MAX_SCAN_TUPLES = 200_000;

/**
 * pgvector's settings of a walk. On Citus the session's do not reach the workers, which walk the
 * shards' indexes: a walk there sets them again with SET LOCAL, which `citus.propagate_set_commands`
 * sends along (see `VectorLeg`).
 */
export const HNSW_SETTINGS = {
  'hnsw.iterative_scan': 'relaxed_order',
  'hnsw.ef_search': SESSION_EF_SEARCH,
  'hnsw.max_scan_tuples': HNSW_MAX_SCAN_TUPLES,
} as const;

/**
 * The connections searches read through: a pool of their own, whose sessions are given the search
 * settings once, when they open, so that a search runs its statements bare: a vector search is one
 * statement and one round trip, not a transaction opened, configured, queried and committed. The
 * settings are the code's own numbers and words, never a caller's input:
 * - `statement_timeout`, the search timeout: the backstop for a statement that the search's deadline
 *   did not cancel (see `cancel`);
 * - `default_transaction_read_only`: searches only read;
 * - `jit` off: compiling a search's statements costs more than it saves (docs/search.md, The connections searches use);
 * - pgvector's iterative HNSW scan, so that a filter still gets its `limit` rows, with `ef_search` at
 *   the usual number of candidates (a leg that wants more sets it for its own transaction).
 * They are set with `SET` on each new connection, not passed in the `options` startup parameter,
 * which poolers such as PgBouncer refuse or drop. Ingestion's long transactions cannot exhaust this
 * pool, nor searches the main one. A search waits for a free connection no longer than the search
 * timeout: a full pool is a search that ran out of time (504 `query_timeout` at its deadline), not a
 * database that is down.
 */
@Injectable()
export class SearchPool implements OnApplicationShutdown {
  readonly pool: pg.Pool;

  constructor(
    @Inject(SEARCH_CONFIG) config: Pick<SearchConfig, 'timeoutMs' | 'poolSize'>,
    @Inject(DATABASE_CONFIG) database: Pick<DatabaseConfig, 'url'>,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    const settings = {
      statement_timeout: config.timeoutMs,
      default_transaction_read_only: 'on',
      jit: 'off',
      ...HNSW_SETTINGS,
      idle_in_transaction_session_timeout: 60_000,
      // Without Citus, a placeholder PostgreSQL keeps and ignores.
      'citus.propagate_set_commands': 'local',
    };
    const set = Object.entries(settings)
      .map(([name, value]) => `SET ${name} = ${value}`)
      .join('; ');
    // pg-pool's `verify` runs on each new connection before it is handed out; when it fails, the
    // connection is closed and the search gets the error: none runs without its timeout.
    const verify = (client: pg.PoolClient, done: (err?: Error) => void) => {
      client.query(set).then(() => done(), done);
    };
    this.pool = new pg.Pool({
      connectionString: database.url,
      max: config.poolSize,
      application_name: 'dataset-search/search',
      connectionTimeoutMillis: config.timeoutMs,
      verify,
    });
    // An idle connection that the server drops is discarded by the pool; say so, do not crash.
    this.pool.on('error', (err) => logger.warn({ err }, 'search connection lost'));
  }

  /**
   * Asks PostgreSQL to cancel the statement the connection is running, if any (see
   * `cancelStatement`). The caller must not hand the connection to another search afterwards: the
   * request may land after this statement has ended and the next has begun.
   */
  cancel(client: pg.PoolClient): void {
    cancelStatement(client).catch((err: unknown) => {
      this.logger.warn({ err }, 'could not cancel a search statement');
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }
}
