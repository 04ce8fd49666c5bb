import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Tx } from 'src/database/transaction.js';
import type { Scope } from 'src/modules/auth/auth.types.js';
import type { Role } from 'src/modules/auth/users/roles.js';

/** A person's consent to a client: the family of the code and of every token issued from it. */
export interface Grant {
  id: string;
  clientId: string;
  userId: string;
  accountId: string;
  scopes: Scope[];
  resource: string;
  datasetIds: string[] | null;
  codeChallenge: string;
  redirectUri: string;
  codeExpiresAt: Date;
  codeUsedAt: Date | null;
  revokedAt: Date | null;
}

export type NewGrant = Omit<Grant, 'codeUsedAt' | 'revokedAt'> & { codeHash: Buffer };

export type TokenKind = 'access' | 'refresh';

export interface NewToken {
  id: string;
  kind: TokenKind;
  secretHash: Buffer;
  /** The grant's scopes, or fewer (a refresh may narrow them). */
  scopes: Scope[];
  expiresAt: Date;
}

/** A token with what deciding on it needs: its grant, and whether its user and client still stand. */
export interface TokenRecord {
  id: string;
  kind: TokenKind;
  secretHash: Buffer;
  scopes: Scope[];
  expiresAt: Date;
  usedAt: Date | null;
  revokedAt: Date | null;
  grant: Grant;
  userRole: Role;
  /** The user is disabled, or the client deleted: the token is worth nothing. */
  orphaned: boolean;
}

const GRANT_COLUMNS = `g.id, g.client_id AS "clientId", g.user_id AS "userId", g.account_id AS "accountId",
  g.scopes, g.resource, g.dataset_ids AS "datasetIds", g.code_challenge AS "codeChallenge",
  g.redirect_uri AS "redirectUri", g.code_expires_at AS "codeExpiresAt", g.code_used_at AS "codeUsedAt",
  g.revoked_at AS "revokedAt"`;

interface TokenColumns {
  tokenId: string;
  secretHash: Buffer;
  tokenScopes: Scope[];
  expiresAt: Date;
  usedAt: Date | null;
  tokenRevokedAt: Date | null;
  userRole: Role;
  orphaned: boolean;
}

@Injectable()
export class GrantsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insert(grant: NewGrant): Promise<void> {
    await this.db.query(
      `INSERT INTO oauth_grants (id, client_id, user_id, account_id, scopes, resource, dataset_ids, code_hash,
         code_challenge, redirect_uri, code_expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [
        grant.id,
        grant.clientId,
        grant.userId,
        grant.accountId,
        grant.scopes,
        grant.resource,
        grant.datasetIds,
        grant.codeHash,
        grant.codeChallenge,
        grant.redirectUri,
        grant.codeExpiresAt,
      ],
    );
  }

  /** The grant of an authorization code, locked until the transaction ends; null for an unknown code. */
  async findByCodeForUpdate(tx: Tx, codeHash: Buffer): Promise<Grant | null> {
    const [row] = await tx.query<Grant[]>(
      `SELECT ${GRANT_COLUMNS} FROM oauth_grants g WHERE g.code_hash = $1 FOR UPDATE`,
      [codeHash],
    );
    return row ?? null;
  }

  async markCodeUsed(tx: Tx, grantId: string): Promise<void> {
    await tx.query(`UPDATE oauth_grants SET code_used_at = now() WHERE id = $1`, [grantId]);
  }

  /** Revokes the grant, and so every token of its family (token checks read the grant). */
  async revoke(executor: Tx | null, grantId: string): Promise<void> {
    await (executor ?? this.db).query(
      `UPDATE oauth_grants SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`,
      [grantId],
    );
  }

  /**
   * Revokes every grant of a user, and so every token of theirs (when they are disabled, or their
   * password changes); returns how many stood.
   */
  async revokeAllForUser(executor: Tx | null, userId: string): Promise<number> {
    // An UPDATE answers [rows, affected] through TypeORM.
    const [, affected] = await (executor ?? this.db).query<[unknown, number]>(
      `UPDATE oauth_grants SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL`,
      [userId],
    );
    return affected;
  }

  /** Whether the user has let the client in (a grant of theirs to it that stands). */
  async hasConsented(clientId: string, userId: string): Promise<boolean> {
    const rows = await this.db.query<unknown[]>(
      `SELECT 1 FROM oauth_grants WHERE client_id = $1 AND user_id = $2 AND revoked_at IS NULL LIMIT 1`,
      [clientId, userId],
    );
    return rows.length > 0;
  }

  async insertTokens(tx: Tx, grantId: string, tokens: NewToken[]): Promise<void> {
    for (const token of tokens) {
      await tx.query(
        `INSERT INTO oauth_tokens (id, grant_id, kind, secret_hash, scopes, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
        [token.id, grantId, token.kind, token.secretHash, token.scopes, token.expiresAt],
      );
    }
  }

  /**
   * A token by id with its grant, and whether its user is disabled or its client deleted: one
   * statement, since every request with an OAuth token makes it. `tx` locks the token (refreshing).
   */
  async findToken(id: string, kind: TokenKind, tx?: Tx): Promise<TokenRecord | null> {
    const [row] = await (tx ?? this.db).query<(Grant & TokenColumns)[]>(
      `SELECT ${GRANT_COLUMNS}, t.id AS "tokenId", t.secret_hash AS "secretHash", t.scopes AS "tokenScopes", t.expires_at AS "expiresAt",
              t.used_at AS "usedAt", t.revoked_at AS "tokenRevokedAt", u.role AS "userRole",
              (u.disabled_at IS NOT NULL OR c.deleted_at IS NOT NULL) AS orphaned
       FROM oauth_tokens t
       JOIN oauth_grants g ON g.id = t.grant_id
       JOIN users u ON u.id = g.user_id
       JOIN oauth_clients c ON c.id = g.client_id
       WHERE t.id = $1 AND t.kind = $2${tx ? ' FOR UPDATE OF t' : ''}`,
      [id, kind],
    );
    if (!row) return null;
    const {
      tokenId,
      secretHash,
      tokenScopes,
      expiresAt,
      usedAt,
      tokenRevokedAt,
      userRole,
      orphaned,
      ...grant
    } = row;
    return {
      id: tokenId,
      kind,
      secretHash,
      scopes: tokenScopes,
      expiresAt,
      usedAt,
      revokedAt: tokenRevokedAt,
      userRole,
      orphaned,
      grant,
    };
  }

  async markTokenUsed(tx: Tx, tokenId: string): Promise<void> {
    await tx.query(`UPDATE oauth_tokens SET used_at = now() WHERE id = $1`, [tokenId]);
  }

  async revokeToken(tokenId: string): Promise<void> {
    await this.db.query(`UPDATE oauth_tokens SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, [
      tokenId,
    ]);
  }
}
