import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { adminUrl, databaseUrl, TEMPLATE_DATABASE } from './database-names.mjs';

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
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
