// Migrates a template database once per test run; every e2e spec file then clones it
// (CREATE DATABASE ... TEMPLATE), which takes milliseconds instead of a migration run.
// Uses the built CLI, so `npm run build` must have run (the README's test command does).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { adminUrl, databaseUrl } from './utils/database-names.mjs';
import globalTeardown from './global-teardown.mjs';

export default async function globalSetup() {
  // On Citus each spec file's database is migrated on its own (test/utils/test-database.ts).
  if (process.env.TEST_CITUS_WORKERS) return;
  const TEMPLATE_DATABASE = `dss_test_template_${randomBytes(4).toString('hex')}`;
  process.env.DSS_TEST_TEMPLATE = TEMPLATE_DATABASE;
  if (!existsSync('dist/cli.js'))
    throw new Error('dist/cli.js is missing: run `npm run build` before the tests');
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
  } finally {
    await admin.end();
  }
  try {
    execFileSync(process.execPath, ['dist/cli.js', 'migrate'], {
      env: { ...process.env, DATABASE_URL: databaseUrl(TEMPLATE_DATABASE), NODE_ENV: 'test' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  } catch (error) {
    // Jest runs no teardown when the setup fails: the template would be left behind.
    await globalTeardown();
    throw error;
  }
}
