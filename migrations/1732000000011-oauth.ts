import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The OAuth 2.1 authorization server (docs/auth.md). A client registers itself (RFC 7591); a person's
 * consent is a grant, which holds its authorization code (single use, 60 s) and is the family of every
 * token issued from it: reusing the code or a rotated refresh token revokes the grant, and with it all
 * of the family. Secrets, codes and tokens are stored only as SHA-256 hashes: they are random (at least
 * 190 bits), so a slow hash would add nothing but latency.
 */
export class OAuth1732000000011 implements MigrationInterface {
  name = 'OAuth1732000000011';

  async up(db: QueryRunner): Promise<void> {
    await db.query(`
      CREATE TABLE oauth_clients (
        id                          text PRIMARY KEY,
        secret_hash                 bytea,
        token_endpoint_auth_method  text NOT NULL,
        client_name                 text,
        redirect_uris               text[] NOT NULL,
        metadata                    jsonb NOT NULL,
        created_at                  timestamptz NOT NULL DEFAULT now(),
        deleted_at                  timestamptz,
        CONSTRAINT oauth_clients_auth_method CHECK (
          token_endpoint_auth_method IN ('none', 'client_secret_post', 'client_secret_basic')),
        CONSTRAINT oauth_clients_secret CHECK ((secret_hash IS NULL) = (token_endpoint_auth_method = 'none'))
      )`);
    await db.query(`
      CREATE TABLE oauth_grants (
        id               text PRIMARY KEY,
        client_id        text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
        user_id          text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        account_id       text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
        scopes           text[] NOT NULL,
        resource         text NOT NULL,
        dataset_ids      text[],
        code_hash        bytea NOT NULL,
        code_challenge   text NOT NULL,
        redirect_uri     text NOT NULL,
        code_expires_at  timestamptz NOT NULL,
        code_used_at     timestamptz,
        created_at       timestamptz NOT NULL DEFAULT now(),
        revoked_at       timestamptz
      )`);
    await db.query(`CREATE UNIQUE INDEX oauth_grants_code_idx ON oauth_grants (code_hash)`);
    await db.query(`CREATE INDEX oauth_grants_user_idx ON oauth_grants (user_id)`);
    await db.query(`CREATE INDEX oauth_grants_client_idx ON oauth_grants (client_id)`);
    await db.query(`
      CREATE TABLE oauth_tokens (
        id           text PRIMARY KEY,
        grant_id     text NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
        kind         text NOT NULL,
        secret_hash  bytea NOT NULL,
        scopes       text[] NOT NULL,
        expires_at   timestamptz NOT NULL,
        used_at      timestamptz,
        revoked_at   timestamptz,
        created_at   timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT oauth_tokens_kind CHECK (kind IN ('access', 'refresh'))
      )`);
    await db.query(`CREATE INDEX oauth_tokens_grant_idx ON oauth_tokens (grant_id)`);
    // Swagger UI's "Authorize" (at /docs) is a public client of its own; its redirect page is on this
    // service, whose address the authorization endpoint knows (AuthorizationService.redirectUriOf).
    await db.query(`
      INSERT INTO oauth_clients (id, secret_hash, token_endpoint_auth_method, client_name, redirect_uris, metadata)
      VALUES ('swagger-ui', NULL, 'none', 'Swagger UI (API docs)', '{}',
        '{"redirect_uris": [], "token_endpoint_auth_method": "none", "grant_types": ["authorization_code"],
          "response_types": ["code"], "client_name": "Swagger UI (API docs)"}')`);
  }

  async down(db: QueryRunner): Promise<void> {
    await db.query(`DROP TABLE oauth_tokens`);
    await db.query(`DROP TABLE oauth_grants`);
    await db.query(`DROP TABLE oauth_clients`);
  }
}
