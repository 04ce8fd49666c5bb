import { AppError } from 'src/common/errors/app-error.js';
import type { TransactionRunner, Tx } from 'src/database/transaction.js';
import type { AccountsRepository } from 'src/modules/auth/accounts/accounts.repository.js';
import type { GrantRevocationService } from 'src/modules/auth/oauth/grants/grant-revocation.service.js';
import type { SessionStore } from 'src/modules/auth/sessions/store/session-store.js';
import type { UserEntity } from 'src/modules/auth/users/user.entity.js';
import type { UsersRepository } from 'src/modules/auth/users/users.repository.js';
import { UsersService } from 'src/modules/auth/users/users.service.js';
import { strictMock } from '../../../../test/utils/strict-mock.js';

const USER = 'usr_AbCdEfGhIjKlMnOpQrStUv';

/** The service over a user who exists (or not), with what each store was asked, in order. */
function serviceFor(exists: boolean) {
  const calls: string[] = [];
  const tx = strictMock<Tx>({}, 'Tx');
  const where = (executor: Tx | null) => (executor === tx ? 'in the transaction' : 'on its own');
  const user = { id: USER } as UserEntity;
  const users = strictMock<UsersRepository>(
    {
      disable: (executor, id) => {
        calls.push(`disable ${id} ${where(executor)}`);
        return Promise.resolve(exists);
      },
      setPasswordHash: (executor, id) => {
        calls.push(`set the password of ${id} ${where(executor)}`);
        return Promise.resolve(exists);
      },
      findById: () => Promise.resolve(exists ? user : null),
    },
    'UsersRepository',
  );
  const grants = strictMock<GrantRevocationService>(
    {
      revokeAllOf: (executor, id) => {
        calls.push(`revoke the grants of ${id} ${where(executor)}`);
        return Promise.resolve(2);
      },
    },
    'GrantRevocationService',
  );
  const sessions = strictMock<SessionStore>(
    {
      destroyAllFor: (id) => {
        calls.push(`end the sessions of ${id}`);
        return Promise.resolve(1);
      },
    },
    'SessionStore',
  );
  const transactions = strictMock<TransactionRunner>(
    {
      run: (async (work: (tx: Tx) => Promise<unknown>) => {
        calls.push('begin');
        const result = await work(tx);
        calls.push('commit');
        return result;
      }) as TransactionRunner['run'],
    },
    'TransactionRunner',
  );
  const accounts = strictMock<AccountsRepository>({}, 'AccountsRepository');
  return { service: new UsersService(accounts, users, sessions, grants, transactions), calls };
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AppError) return error.code;
    throw error;
  }
  return undefined;
}

describe('UsersService', () => {
  it('disables a user and revokes their grants in one transaction, then ends their sessions', async () => {
    const { service, calls } = serviceFor(true);
    await service.disable(USER);
    expect(calls).toEqual([
      'begin',
      `disable ${USER} in the transaction`,
      `revoke the grants of ${USER} in the transaction`,
      'commit',
      `end the sessions of ${USER}`,
    ]);
  });

  it('answers 404 user_not_found when disabling a user who does not exist, and revokes and ends nothing', async () => {
    const { service, calls } = serviceFor(false);
    expect(await codeOf(service.disable(USER))).toBe('user_not_found');
    expect(calls).toEqual(['begin', `disable ${USER} in the transaction`]);
  });

  it('sets a password and revokes the grants in one transaction, ends the sessions, and counts the grants', async () => {
    const { service, calls } = serviceFor(true);
    expect(await service.setPassword(USER, 'correct horse battery staple')).toEqual({ grants_revoked: 2 });
    expect(calls).toEqual([
      'begin',
      `set the password of ${USER} in the transaction`,
      `revoke the grants of ${USER} in the transaction`,
      'commit',
      `end the sessions of ${USER}`,
    ]);
  });

  it("revokes a user's grants alone, leaving their sessions", async () => {
    const { service, calls } = serviceFor(true);
    expect(await service.revokeGrants(USER)).toEqual({ grants_revoked: 2 });
    expect(calls).toEqual([`revoke the grants of ${USER} on its own`]);
  });

  it('answers 404 user_not_found when revoking the grants of a user who does not exist', async () => {
    const { service, calls } = serviceFor(false);
    expect(await codeOf(service.revokeGrants(USER))).toBe('user_not_found');
    expect(calls).toEqual([]);
  });
});
