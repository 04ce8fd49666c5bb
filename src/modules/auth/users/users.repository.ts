import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Tx } from 'src/database/transaction.js';
import { isUniqueViolation } from 'src/database/unique-violation.js';
import type { UserEntity } from 'src/modules/auth/users/user.entity.js';

const USER_COLUMNS = `u.id, u.account_id AS "accountId", u.email, u.display_name AS "displayName", u.role,
  u.disabled_at AS "disabledAt", u.created_at AS "createdAt", u.updated_at AS "updatedAt"`;

export type NewUser = Pick<
  UserEntity,
  'id' | 'accountId' | 'email' | 'displayName' | 'role' | 'passwordHash'
>;

/** True when an insert failed on the unique email index. */
function isEmailConflict(error: unknown): boolean {
  return isUniqueViolation(error, 'users_email_idx');
}

@Injectable()
export class UsersRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Inserts the user; false when the email is taken. */
  async insert(user: NewUser): Promise<UserEntity | null> {
    try {
      const [row] = await this.db.query<UserEntity[]>(
        `INSERT INTO users AS u (id, account_id, email, display_name, role, password_hash)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${USER_COLUMNS}`,
        [user.id, user.accountId, user.email, user.displayName, user.role, user.passwordHash],
      );
      return row;
    } catch (error) {
      if (isEmailConflict(error)) return null;
      throw error;
    }
  }

  async findById(id: string): Promise<UserEntity | null> {
    const [row] = await this.db.query<UserEntity[]>(`SELECT ${USER_COLUMNS} FROM users u WHERE u.id = $1`, [
      id,
    ]);
    return row ?? null;
  }

  /** The user with this (lower-cased) email, with the password hash, for signing in. */
  async findByEmailForSignIn(email: string): Promise<(UserEntity & { passwordHash: string }) | null> {
    const [row] = await this.db.query<(UserEntity & { passwordHash: string })[]>(
      `SELECT ${USER_COLUMNS}, u.password_hash AS "passwordHash" FROM users u WHERE u.email = $1`,
      [email],
    );
    return row ?? null;
  }

  listForAccount(accountId: string): Promise<UserEntity[]> {
    return this.db.query<UserEntity[]>(
      `SELECT ${USER_COLUMNS} FROM users u WHERE u.account_id = $1 ORDER BY u.created_at, u.id`,
      [accountId],
    );
  }

  /** Marks the user disabled; false when there is no such user or they were disabled already. */
  async disable(tx: Tx, id: string): Promise<boolean> {
    // An UPDATE answers [rows, affected] through TypeORM.
    const [, affected] = await tx.query<[unknown, number]>(
      `UPDATE users SET disabled_at = now(), updated_at = now() WHERE id = $1 AND disabled_at IS NULL`,
      [id],
    );
    return affected > 0;
  }

  /** Replaces the password hash; false when there is no such user. */
  async setPasswordHash(tx: Tx, id: string, passwordHash: string): Promise<boolean> {
    const [, affected] = await tx.query<[unknown, number]>(
      `UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1`,
      [id, passwordHash],
    );
    return affected > 0;
  }
}
