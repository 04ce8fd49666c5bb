import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every API process keeps the keys it has verified in memory for a while (see ApiKeyCache). A key that
 * is revoked, deleted or given another secret or account is announced on the channel
 * `api_key_changed` when the change commits, whoever makes it (the command line, another process, an
 * operator's SQL), and every process forgets it. Writes of `last_used_at` alone announce nothing.
 */
export class ApiKeyChanges1732000000005 implements MigrationInterface {
  name = 'ApiKeyChanges1732000000005';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE FUNCTION api_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('api_key_changed', OLD.id);
        RETURN NULL;
      END
      $$`);
    await db.query(`
      CREATE TRIGGER api_key_changed
        AFTER UPDATE OF revoked_at, secret_hash, account_id, id OR DELETE ON api_keys
        FOR EACH ROW EXECUTE FUNCTION api_key_changed()`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TRIGGER api_key_changed ON api_keys`);
    await db.query(`DROP FUNCTION api_key_changed()`);
  }
}
