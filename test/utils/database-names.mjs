// Shared by the global setup (plain Node) and the specs.
// One template per test run (the global setup names it and passes it to the workers through the
// environment), so that two runs on one server never drop each other's template.
export const TEMPLATE_DATABASE = process.env.DSS_TEST_TEMPLATE ?? 'dss_test_template';

/** A server connection for CREATE/DROP DATABASE. */
export function adminUrl() {
  return process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

export function databaseUrl(name) {
  if (!name.includes('test'))
    throw new Error(`Refusing to use database "${name}": test database names contain "test"`);
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}
