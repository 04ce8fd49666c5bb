import { Injectable } from '@nestjs/common';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { AuthTier, type Principal } from 'src/modules/auth/auth.types.js';
import type { SessionResponseDto } from 'src/modules/auth/sessions/session.dto.js';
import { type ActiveSession, SessionStore } from 'src/modules/auth/sessions/store/session-store.js';
import { SessionErrors } from 'src/modules/auth/sessions/sessions.errors.js';
import { SignInThrottle } from 'src/modules/auth/sessions/sign-in-throttle.js';
import { decoyHash, verifyPassword } from 'src/modules/auth/users/passwords.js';
import { ROLE_SCOPES } from 'src/modules/auth/users/roles.js';
import type { UserEntity } from 'src/modules/auth/users/user.entity.js';
import { normalizeEmail } from 'src/modules/auth/users/users.service.js';
import { UsersRepository } from 'src/modules/auth/users/users.repository.js';

/** A signed-in person: the session, its user, and the principal the guards see. */
export interface SignedIn {
  session: ActiveSession;
  user: UserEntity;
  principal: Principal;
}

@Injectable()
export class SessionsService {
  constructor(
    private readonly users: UsersRepository,
    private readonly store: SessionStore,
    private readonly throttle: SignInThrottle,
  ) {}

  /**
   * Checks the password and starts a session under a new id. Every failure is the same 401, and an
   * unknown email costs one password hash too, so that neither the answer nor its timing tells which
   * emails have users (a disabled user is refused the same way).
   */
  async signIn(
    email: string,
    password: string,
    address: string | undefined,
  ): Promise<SignedIn & { id: string }> {
    const normalized = normalizeEmail(email) ?? email.trim().toLowerCase();
    const giveBack = await this.throttle.begin(address, normalized);
    const user = await this.users.findByEmailForSignIn(normalized);
    const matches = await verifyPassword(password, user?.passwordHash ?? (await decoyHash()));
    if (!user || !matches || user.disabledAt !== null) throw SessionErrors.invalidCredentials();
    await giveBack();
    const { id, session } = await this.store.create(user);
    return { id, session, user, principal: principalOf(user) };
  }

  /** The session a cookie names, with its user as they are now; 401 invalid_session once either has ended. */
  async authenticate(cookie: string): Promise<SignedIn> {
    const session = await this.store.touch(cookie);
    if (!session) throw CommonErrors.invalidSession();
    const user = await this.users.findById(session.userId);
    if (!user || user.disabledAt !== null || user.accountId !== session.accountId) {
      await this.store.destroy(cookie);
      throw CommonErrors.invalidSession();
    }
    return { session, user, principal: principalOf(user) };
  }

  /** Ends the session the cookie names (signing out, or signing in again from the same browser). */
  signOut(cookie: string): Promise<void> {
    return this.store.destroy(cookie);
  }
}

/** The Session tier's principal: the user's role as scopes, the user as the rate-limited credential. */
function principalOf(user: UserEntity): Principal {
  return {
    tier: AuthTier.Session,
    accountId: user.accountId,
    credentialId: user.id,
    scopes: ROLE_SCOPES[user.role],
    userId: user.id,
    datasetIds: null,
    audience: null,
  };
}

export function toSessionResponse({ user, session }: Pick<SignedIn, 'user' | 'session'>): SessionResponseDto {
  return {
    user: {
      id: user.id,
      account_id: user.accountId,
      email: user.email,
      display_name: user.displayName,
      role: user.role,
    },
    expires_at: new Date(session.expiresAt).toISOString(),
    idle_expires_at: new Date(session.idleExpiresAt).toISOString(),
  };
}

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by AuthenticationGuard for a request authenticated by its session cookie. */
    signedIn?: SignedIn & { cookie: string };
  }
}
