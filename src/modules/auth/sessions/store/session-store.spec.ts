import type { RedisConfig } from 'src/common/redis/redis.config.js';
import type { Redis } from 'src/common/redis/redis.module.js';
import type { SessionsConfig } from 'src/modules/auth/sessions/sessions.config.js';
import {
  formatSessionCookie,
  parseSessionCookie,
  SessionStore,
} from 'src/modules/auth/sessions/store/session-store.js';
import { strictMock } from '../../../../../test/utils/strict-mock.js';

const USER = 'usr_AbCdEfGhIjKlMnOpQrStUv';
const SECRET = 'A'.repeat(42) + 'g';

describe('session cookies', () => {
  it('carry the user, whose hash tag the keys share, and the secret', () => {
    const value = formatSessionCookie({ userId: USER, secret: SECRET });
    expect(value).toBe(`${USER}.${SECRET}`);
    expect(parseSessionCookie(value)).toEqual({ userId: USER, secret: SECRET });
  });

  it.each([
    ['a bare secret (no user)', SECRET],
    ['a user id of another type', `acc_AbCdEfGhIjKlMnOpQrStUv.${SECRET}`],
    ['braces, which would change the hash tag', `usr_AbCdEfGhIjKlMn{pQrStUv.${SECRET}`],
    ['a short secret', `${USER}.${SECRET.slice(1)}`],
    ['a secret with other characters', `${USER}.${SECRET.slice(1)}.`],
    ['nothing', ''],
  ])('names no session when it is %s', (_, value) => {
    expect(parseSessionCookie(value)).toBeNull();
  });
});

describe('SessionStore.destroyAllFor', () => {
  /** The store over a Redis whose index lists `members`, and whose script answers `answers` in turn. */
  function storeOver(members: string[], answers: number[]) {
    const scripts: { keys: string[]; arguments: string[] }[] = [];
    const redis = strictMock<Redis>(
      {
        sMembers: (() => Promise.resolve(members)) as unknown as Redis['sMembers'],
        eval: ((_script: string, options: { keys: string[]; arguments: string[] }) => {
          scripts.push(options);
          return Promise.resolve(answers.shift());
        }) as unknown as Redis['eval'],
      },
      'Redis',
    );
    const store = new SessionStore(
      redis,
      { idleSeconds: 60, lifetimeSeconds: 600 } as SessionsConfig,
      { prefix: 'dss' } as RedisConfig,
    );
    return { store, scripts };
  }

  it("names every key it deletes, all under the user's hash tag", async () => {
    const { store, scripts } = storeOver(['h1', 'h2'], [2]);
    await expect(store.destroyAllFor(USER)).resolves.toBe(2);
    expect(scripts).toEqual([
      {
        keys: [`dss:session:{${USER}}:all`, `dss:session:{${USER}}:h1`, `dss:session:{${USER}}:h2`],
        arguments: [`dss:session:{${USER}}:`],
      },
    ]);
  });

  it('reads the index again when a session was started meanwhile', async () => {
    const { store, scripts } = storeOver(['h1'], [-1, -1, 1]);
    await expect(store.destroyAllFor(USER)).resolves.toBe(1);
    expect(scripts).toHaveLength(3);
  });
});
