import { Injectable } from '@nestjs/common';
import { newId } from 'src/common/ids/ids.js';
import { TransactionRunner } from 'src/database/transaction.js';
import { AccountsRepository } from 'src/modules/auth/accounts/accounts.repository.js';
import { GrantRevocationService } from 'src/modules/auth/oauth/grants/grant-revocation.service.js';
import { SessionStore } from 'src/modules/auth/sessions/store/session-store.js';
import { generatePassword, hashPassword, passwordIssue } from 'src/modules/auth/users/passwords.js';
import { isRole, type Role } from 'src/modules/auth/users/roles.js';
import type { UserEntity } from 'src/modules/auth/users/user.entity.js';
import { UserErrors } from 'src/modules/auth/users/users.errors.js';
import { UsersRepository } from 'src/modules/auth/users/users.repository.js';

/** A user as the API and the command line show them: never the password hash. */
export interface UserResponse {
  id: string;
  account_id: string;
  email: string;
  display_name: string;
  role: Role;
  disabled_at: string | null;
  created_at: string;
}

export function toUserResponse(user: UserEntity): UserResponse {
  return {
    id: user.id,
    account_id: user.accountId,
    email: user.email,
    display_name: user.displayName,
    role: user.role,
    disabled_at: user.disabledAt?.toISOString() ?? null,
    created_at: user.createdAt.toISOString(),
  };
}

/** Lower-cased and trimmed; one `@` with something on each side, no spaces, at most 254 characters. */
export function normalizeEmail(email: string): string | null {
  const normalized = email.trim().toLowerCase();
  return normalized.length <= 254 && /^[^\s@]+@[^\s@]+$/.test(normalized) ? normalized : null;
}

export interface NewUserInput {
  account: string;
  email: string;
  role?: string;
  displayName?: string;
  /** Generated (and returned) when absent. */
  password?: string;
}

/** The people of an account: created, listed and disabled on the command line. */
@Injectable()
export class UsersService {
  constructor(
    private readonly accounts: AccountsRepository,
    private readonly users: UsersRepository,
    private readonly sessions: SessionStore,
    private readonly grants: GrantRevocationService,
    private readonly transactions: TransactionRunner,
  ) {}

  /** Creates the account when needed and the user in it; a generated password is returned, once. */
  async create(input: NewUserInput): Promise<{ user: UserResponse; password?: string }> {
    const email = normalizeEmail(input.email);
    if (!email) throw UserErrors.invalidEmail();
    const role = input.role ?? 'member';
    if (!isRole(role)) throw UserErrors.invalidRole(role);
    const displayName = (input.displayName ?? '').trim();
    if ([...displayName].length > 200) throw UserErrors.invalidDisplayName();
    const password = input.password ?? generatePassword();
    const issue = passwordIssue(password);
    if (issue) throw UserErrors.invalidPassword(issue);

    const account = await this.accounts.findOrCreate(input.account);
    const user = await this.users.insert({
      id: newId('usr'),
      accountId: account.id,
      email,
      displayName,
      role,
      passwordHash: await hashPassword(password),
    });
    if (!user) throw UserErrors.emailTaken(email);
    return { user: toUserResponse(user), ...(input.password === undefined ? { password } : {}) };
  }

  async list(accountName: string): Promise<UserResponse[]> {
    const account = await this.accounts.get(accountName);
    return (await this.users.listForAccount(account.id)).map(toUserResponse);
  }

  /**
   * Disables the user, revokes their OAuth grants and ends their sessions. Every credential of theirs
   * is refused from the moment the row changes, in every process, since each request reads the user
   * (sessions and OAuth tokens alike); revoking and removing the sessions from Redis make it last.
   */
  async disable(userId: string): Promise<void> {
    await this.transactions.run(async (tx) => {
      if (!(await this.users.disable(tx, userId)) && !(await this.users.findById(userId))) {
        throw UserErrors.notFound(userId);
      }
      // Disabled already: revoking and ending the sessions again is harmless.
      await this.grants.revokeAllOf(tx, userId);
    });
    await this.sessions.destroyAllFor(userId);
  }

  /**
   * Sets a new password (generated and returned when absent), revokes the user's OAuth grants and ends
   * their sessions: a password changed after a compromise leaves nothing signed in with the old one.
   */
  async setPassword(
    userId: string,
    password?: string,
  ): Promise<{ password?: string; grants_revoked: number }> {
    const chosen = password ?? generatePassword();
    const issue = passwordIssue(chosen);
    if (issue) throw UserErrors.invalidPassword(issue);
    const hash = await hashPassword(chosen);
    const revoked = await this.transactions.run(async (tx) => {
      if (!(await this.users.setPasswordHash(tx, userId, hash))) throw UserErrors.notFound(userId);
      return this.grants.revokeAllOf(tx, userId);
    });
    await this.sessions.destroyAllFor(userId);
    return { ...(password === undefined ? { password: chosen } : {}), grants_revoked: revoked };
  }

  /** Revokes every OAuth grant of the user (a token suspected leaked), leaving the password and sessions. */
  async revokeGrants(userId: string): Promise<{ grants_revoked: number }> {
    if (!(await this.users.findById(userId))) throw UserErrors.notFound(userId);
    return { grants_revoked: await this.grants.revokeAllOf(null, userId) };
  }
}
