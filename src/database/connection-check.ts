import pg from 'pg';
import { AppError } from 'src/common/errors/app-error.js';
import { redactUrl } from 'src/config/define.js';
import type { DatabaseConfig } from 'src/database/database.config.js';

export type ConnectionSettings = Pick<DatabaseConfig, 'url' | 'connectTimeoutMs'>;

/**
 * Opens one connection to DATABASE_URL and closes it, within DATABASE_CONNECT_TIMEOUT_MS, before the
 * pools are made: a process that cannot reach its database says so at once, naming where it looked,
 * rather than waiting out the pools' own timeouts and retries.
 */
export async function checkDatabaseConnection(settings: ConnectionSettings): Promise<void> {
  const client = new pg.Client({
    connectionString: settings.url,
    connectionTimeoutMillis: settings.connectTimeoutMs,
    application_name: 'dataset-search',
  });
  // An error after the connection failed (the socket closing) is already reported by connect().
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    throw unreachable(settings, client, error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Where pg connects, as it read DATABASE_URL (a `host` parameter, a socket directory, PG* defaults). */
type Target = Pick<pg.Client, 'host' | 'port' | 'user' | 'database'>;

/** 503 database_unreachable: where the process looked, what went wrong there, and what to check. */
function unreachable(settings: ConnectionSettings, target: Target, error: unknown): AppError {
  const host = target.host || 'localhost';
  const port = target.port || 5432;
  // A host that is a path is the directory of a Unix socket, as in libpq.
  const address = host.startsWith('/') ? `the Unix socket ${host}/.s.PGSQL.${port}` : `${host}:${port}`;
  const { code, message } = error as { code?: string; message?: string };
  const [why, check] = reasonOf(code, message ?? String(error), settings.connectTimeoutMs, {
    user: target.user ?? '',
    database: target.database || target.user || '',
  });
  return new AppError(
    503,
    'database_unreachable',
    `Cannot connect to PostgreSQL at ${address} (DATABASE_URL=${redactUrl(settings.url)}): ${why}. ${check}.`,
  );
}

function reasonOf(
  code: string | undefined,
  message: string,
  timeoutMs: number,
  names: { user: string; database: string },
): [string, string] {
  const hostAndPort = 'Check that PostgreSQL is running there and that DATABASE_URL names its host and port';
  if (code === 'ECONNREFUSED') return ['connection refused, nothing listens there', hostAndPort];
  if (code === 'ENOENT') return ['no socket there', hostAndPort];
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return ['the host name does not resolve', hostAndPort];
  if (/timeout/i.test(message)) {
    return [
      `no answer within ${timeoutMs} ms`,
      `${hostAndPort}, and that no firewall drops the connection (DATABASE_CONNECT_TIMEOUT_MS sets the wait)`,
    ];
  }
  // PostgreSQL's own refusals: https://www.postgresql.org/docs/current/errcodes-appendix.html
  if (code === '28P01' || code === '28000') {
    return [message, `Check the user (${names.user}) and password in DATABASE_URL`];
  }
  if (code === '3D000') {
    return [message, `Create it (createdb ${names.database}) or name an existing database in DATABASE_URL`];
  }
  return [message, hostAndPort];
}
