import { join } from 'node:path';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { PROJECT_ROOT } from 'src/config/project-root.js';
import type { DatabaseConfig } from 'src/database/database.config.js';

/** Migrations are compiled from `migrations/` to `dist/migrations/` by `npm run build`. */
export const MIGRATIONS_GLOB = join(PROJECT_ROOT, 'dist', 'migrations', '*.js');

/** How long a statement waits for a connection of an exhausted pool before it fails (503 to a client). */
const POOL_WAIT_MS = 10_000;

/**
 * On Citus, a transaction that read several shards in parallel cannot then write a reference table
 * (`datasets`); run over one connection per worker instead, it can. PostgreSQL without Citus keeps
 * the setting as a placeholder and ignores it.
 */
export const CITUS_SESSION_OPTIONS = '-c citus.multi_shard_modify_mode=sequential';

export type DatabaseSettings = Pick<DatabaseConfig, 'url' | 'poolSize'>;

export function dataSourceOptions(config: DatabaseSettings): DataSourceOptions {
  return {
    type: 'postgres',
    url: config.url,
    migrations: [MIGRATIONS_GLOB],
    migrationsTableName: 'schema_migrations',
    // The schema is owned by migrations only.
    synchronize: false,
    migrationsRun: false,
    extra: {
      max: config.poolSize,
      application_name: 'dataset-search',
      // Fail a request rather than queue it forever when the pool is exhausted.
      connectionTimeoutMillis: POOL_WAIT_MS,
      // A transaction left open by a bug releases its locks and connection after a minute.
      idle_in_transaction_session_timeout: 60_000,
      options: CITUS_SESSION_OPTIONS,
    },
  };
}

export function createDataSource(config: DatabaseSettings): DataSource {
  return new DataSource(dataSourceOptions(config));
}
