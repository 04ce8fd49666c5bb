import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import pg from 'pg';
import { adminUrl, databaseUrl, TEMPLATE_DATABASE } from './database-names.mjs';

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** `work` on a connection of its own to `url`, closed after it. */
async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  return withClient(adminUrl(), work);
}

/**
 * A fresh, migrated database for one spec file, cloned from the template the global setup made; with
 * `template` null, an empty one, in `encoding` when given (with the C locale, which takes any).
 */
export async function createTestDatabase(
  template: string | null = TEMPLATE_DATABASE,
  encoding?: string,
): Promise<TestDatabase> {
  const name = `dss_test_${randomBytes(6).toString('hex')}`;
  const url = databaseUrl(name);
  const options = template
    ? ` TEMPLATE ${template}`
    : encoding
      ? ` TEMPLATE template0 ENCODING '${encoding}' LC_COLLATE 'C' LC_CTYPE 'C'`
      : '';
  if (CITUS_WORKERS.length > 0) return createCitusDatabase(name, template !== null);
  await withAdmin((client) => client.query(`CREATE DATABASE ${name}${options}`));
  return {
    name,
    url,
    drop: () =>
      withAdmin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(
        () => undefined,
      ),
  };
}

/**
 * The Citus nodes of the distributed pass (`TEST_CITUS_WORKERS`, host:port of each worker beside the
 * coordinator of `TEST_DATABASE_ADMIN_URL`, as scripts/cluster.sh starts them).
 */
const CITUS_WORKERS = (process.env.TEST_CITUS_WORKERS ?? '').split(',').filter(Boolean);

function nodeUrl(hostPort: string, database: string): string {
  const url = new URL(adminUrl());
  url.host = hostPort;
  url.pathname = `/${database}`;
  return url.toString();
}

/**
 * On Citus a database is one per node, each with the extensions, the workers registered in the
 * coordinator's: a template does not carry over to the workers, so a migrated one is migrated here.
 */
async function createCitusDatabase(name: string, migrated: boolean): Promise<TestDatabase> {
  const coordinator = new URL(adminUrl()).host;
  const nodes = [coordinator, ...CITUS_WORKERS];
  const drop = async () => {
    for (const node of nodes) {
      await withClient(nodeUrl(node, 'postgres'), (c) =>
        c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
      );
    }
  };
  try {
    for (const node of nodes) {
      await withClient(nodeUrl(node, 'postgres'), (c) => c.query(`CREATE DATABASE ${name}`));
      await withClient(nodeUrl(node, name), (c) =>
        c.query('CREATE EXTENSION citus; CREATE EXTENSION vector'),
      );
    }
    await withClient(databaseUrl(name), async (c) => {
      const [host, port] = coordinator.split(':');
      await c.query('SELECT citus_set_coordinator_host($1, $2)', [host, Number(port)]);
      for (const worker of CITUS_WORKERS) {
        const [workerHost, workerPort] = worker.split(':');
        await c.query('SELECT citus_add_node($1, $2)', [workerHost, Number(workerPort)]);
      }
    });
    if (migrated) {
      await promisify(execFile)(process.execPath, ['dist/cli.js', 'migrate'], {
        env: { PATH: process.env.PATH, NODE_ENV: 'test', DATABASE_URL: databaseUrl(name) },
      });
    }
  } catch (error) {
    await drop();
    throw error;
  }
  return { name, url: databaseUrl(name), drop };
}

/**
 * A database on the admin server without Citus, migrated by the service's command line: one
 * PostgreSQL's layout, in the distributed pass too (where the server is the coordinator).
 */
export async function createPlainTestDatabase(): Promise<TestDatabase> {
  const name = `dss_test_${randomBytes(6).toString('hex')}`;
  const url = databaseUrl(name);
  await withAdmin((client) => client.query(`CREATE DATABASE ${name}`));
  const drop = () =>
    withAdmin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined);
  try {
    await promisify(execFile)(process.execPath, ['dist/cli.js', 'migrate'], {
      env: { PATH: process.env.PATH, NODE_ENV: 'test', DATABASE_URL: url },
    });
  } catch (error) {
    await drop();
    throw error;
  }
  return { name, url, drop };
}
