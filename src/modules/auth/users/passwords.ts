import { randomBytes, scrypt, type ScryptOptions, timingSafeEqual } from 'node:crypto';

/**
 * Passwords are hashed with scrypt (node:crypto) at OWASP's recommended cost for it: N = 2^15, r = 8,
 * p = 3, which takes 32 MiB (docs/decisions.md, Passwords, gives its time per hash). The
 * stored string names its parameters (`$scrypt$ln=15,r=8,p=3$<salt>$<hash>`, PHC style), so that a
 * later cost applies to new hashes while old ones still verify.
 */
const COST = { ln: 15, r: 8, p: 3 } as const;
const SALT_BYTES = 16;
const KEY_BYTES = 32;
const FORMAT =
  /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

export const PASSWORD_LENGTH = { min: 12, max: 1024 } as const;

/** Why a password cannot be used, or null; lengths count characters (code points), not bytes. */
export function passwordIssue(password: string): string | null {
  const length = [...password].length;
  if (length < PASSWORD_LENGTH.min || length > PASSWORD_LENGTH.max) {
    return `must be ${PASSWORD_LENGTH.min}-${PASSWORD_LENGTH.max} characters, got ${length}`;
  }
  return null;
}

function derive(password: string, salt: Buffer, cost: { ln: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = {
    N: 2 ** cost.ln,
    r: cost.r,
    p: cost.p,
    // scrypt needs 128 * N * r bytes; the default ceiling (32 MiB) is just short of N = 2^15, r = 8.
    maxmem: 256 * 2 ** cost.ln * cost.r,
  };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, options, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, COST);
  return `$scrypt$ln=${COST.ln},r=${COST.r},p=${COST.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** Whether `password` is the one `stored` was made from; a malformed `stored` matches nothing. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = FORMAT.exec(stored);
  if (!parts) return false;
  const [, ln, r, p, salt, expected] = parts;
  const key = await derive(password, Buffer.from(salt, 'base64'), { ln: +ln, r: +r, p: +p });
  const wanted = Buffer.from(expected, 'base64');
  return wanted.length === key.length && timingSafeEqual(key, wanted);
}

/**
 * A hash no password was made from, verified against when an email is unknown, so that an unknown
 * email costs as long as a wrong password and timing does not tell which emails have accounts.
 */
let decoy: Promise<string> | null = null;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(24).toString('base64'));
  return decoy;
}

/** A password of 24 URL-safe characters (144 random bits), for when none is given. */
export function generatePassword(): string {
  return randomBytes(18).toString('base64url');
}
