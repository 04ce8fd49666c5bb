import { createHash, timingSafeEqual } from 'node:crypto';

/** RFC 7636 4.1: 43-128 characters of the unreserved set. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** The S256 challenge of such a verifier: 43 base64url characters (a SHA-256, unpadded). */
export const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** Whether `verifier` is the one `challenge` was made from with S256, the only method accepted. */
export function verifiesChallenge(verifier: string, challenge: string): boolean {
  if (!VERIFIER.test(verifier) || !CHALLENGE.test(challenge)) return false;
  const computed = Buffer.from(createHash('sha256').update(verifier).digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}
