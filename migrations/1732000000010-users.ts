import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * People who sign in to an account (the Session and OAuth tiers). An email names one person across the
 * whole service, since signing in names no account; it is stored lower-cased and unique. The password
 * hash is a self-describing scrypt string (see passwords.ts), so its parameters can change later
 * without a migration.
 */
export class Users1732000000010 implements MigrationInterface {
  name = 'Users1732000000010';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE users (
        id             text PRIMARY KEY,
        account_id     text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
        email          text NOT NULL,
        display_name   text NOT NULL,
        role           text NOT NULL,
        password_hash  text NOT NULL,
        disabled_at    timestamptz,
        created_at     timestamptz NOT NULL DEFAULT now(),
        updated_at     timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT users_email_lower CHECK (email = lower(email)),
        CONSTRAINT users_role CHECK (role IN ('admin', 'member', 'viewer'))
      )`);
    await db.query(`CREATE UNIQUE INDEX users_email_idx ON users (email)`);
    await db.query(`CREATE INDEX users_account_idx ON users (account_id, created_at)`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE users`);
  }
}
