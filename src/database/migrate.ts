import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { createDataSource, type DatabaseSettings } from 'src/database/data-source.js';

/** Any constant works as long as every process of this service uses the same one. */
const MIGRATION_LOCK_KEY = 7_316_002_117;

const MIN_POSTGRES_MAJOR = 15;
const MIN_PGVECTOR = '0.8.0';

export class UnsupportedDatabaseError extends Error {}

/**
 * Checks the server and the vector extension, then applies pending migrations. A session-level
 * advisory lock serialises concurrent boots (several API processes and workers starting at once):
 * the first migrates, the others wait and then find nothing pending.
 */
export async function migrateDatabase(dataSource: DataSource, logger: Logger): Promise<string[]> {
  await checkServer(dataSource);
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      const applied = await dataSource.runMigrations({ transaction: 'each' });
      for (const migration of applied) logger.info({ migration: migration.name }, 'migration applied');
      return applied.map((m) => m.name);
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await runner.release();
  }
}

/** Opens a short-lived connection, migrates, and closes it. */
export async function migrate(config: DatabaseSettings, logger: Logger): Promise<string[]> {
  const dataSource = await createDataSource(config).initialize();
  try {
    return await migrateDatabase(dataSource, logger);
  } finally {
    await dataSource.destroy();
  }
}

/** PostgreSQL and pgvector recent enough, and a database in UTF-8. */
async function checkServer(dataSource: DataSource): Promise<void> {
  const [{ server_version_num }] =
    await dataSource.query<{ server_version_num: string }[]>('SHOW server_version_num');
  const major = Math.floor(Number(server_version_num) / 10_000);
  if (major < MIN_POSTGRES_MAJOR) {
    throw new UnsupportedDatabaseError(
      `PostgreSQL ${MIN_POSTGRES_MAJOR} or newer is required, found ${major}`,
    );
  }
  const [{ server_encoding }] = await dataSource.query<{ server_encoding: string }[]>('SHOW server_encoding');
  if (server_encoding !== 'UTF8') {
    // Documents hold text of any language, and BM25 lexemes come from its Unicode forms
    // (`lexemeSource`): in another encoding, text beyond it fails to be stored.
    throw new UnsupportedDatabaseError(
      `The database must be encoded in UTF8, found ${server_encoding} (CREATE DATABASE ... ENCODING 'UTF8' TEMPLATE template0)`,
    );
  }
  const rows = await dataSource.query<{ default_version: string }[]>(
    `SELECT default_version FROM pg_available_extensions WHERE name = 'vector'`,
  );
  if (rows.length === 0) {
    throw new UnsupportedDatabaseError(
      'The pgvector extension is not installed on the database server (run scripts/install-pgvector.sh)',
    );
  }
  if (compareVersions(rows[0].default_version, MIN_PGVECTOR) < 0) {
    throw new UnsupportedDatabaseError(
      `pgvector ${MIN_PGVECTOR} or newer is required, found ${rows[0].default_version}`,
    );
  }
}

/** Compares dotted version strings numerically: negative when a < b. */
export function compareVersions(a: string, b: string): number {
  const left = a.split('.').map(Number);
  const right = b.split('.').map(Number);
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const diff = (left[i] ?? 0) - (right[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}
