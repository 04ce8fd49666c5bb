import { randomBytes } from 'node:crypto';
import type { TestApp } from './test-app.js';

export interface CreatedUser {
  user: { id: string; account_id: string; email: string; display_name: string; role: string };
  password: string;
}

/** A user made with the command line, with a password of its own. */
export async function createUser(
  t: TestApp,
  options: { account?: string; role?: string; email?: string } = {},
): Promise<CreatedUser> {
  const password = `pw-${randomBytes(12).toString('hex')}`;
  const email = options.email ?? `user-${randomBytes(4).toString('hex')}@example.com`;
  const created = (await t.cliInput(
    `${password}\n`,
    'users',
    'create',
    '--account',
    options.account ?? 'acme',
    '--email',
    email,
    ...(options.role ? ['--role', options.role] : []),
  )) as Omit<CreatedUser, 'password'>;
  return { ...created, password };
}

/** The `Set-Cookie` of a response as `name=value`, for sending back in a Cookie header. */
export function sessionCookieOf(setCookie: string[] | string | undefined): string {
  const header = [setCookie ?? []].flat().find((cookie) => /^(__Host-)?svc_session=/.test(cookie));
  if (!header) throw new Error(`no session cookie set: ${JSON.stringify(setCookie)}`);
  return header.split(';')[0];
}

/** Signs in over HTTP and returns the Cookie header that carries the session. */
export async function signIn(t: TestApp, user: CreatedUser): Promise<string> {
  const response = await t.http
    .post('/v1/auth/session')
    .send({ email: user.user.email, password: user.password })
    .expect(201);
  return sessionCookieOf(response.headers['set-cookie']);
}

/** Headers a browser adds to a request our own page makes. */
export const SAME_ORIGIN = { 'Sec-Fetch-Site': 'same-origin' } as const;
