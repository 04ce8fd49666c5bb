// Drops this run's template database (see global-setup.mjs).
import pg from 'pg';
import { adminUrl } from './utils/database-names.mjs';

export default async function globalTeardown() {
  const name = process.env.DSS_TEST_TEMPLATE;
  if (!name) return;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
