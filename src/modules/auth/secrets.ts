import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Random secrets (API keys, OAuth client secrets, codes and tokens) are stored as their SHA-256: they
 * carry at least 190 random bits, so a slow hash would add latency and no safety.
 */
export function sha256(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/** Whether `secret` hashes to `stored`, compared in constant time; false when nothing is stored. */
export function matchesHash(secret: string, stored: Buffer | null): boolean {
  const presented = sha256(secret);
  // Compared even when nothing is stored, so that timing does not tell the two apart.
  const against = stored?.length === presented.length ? stored : Buffer.alloc(presented.length);
  return timingSafeEqual(presented, against) && stored !== null && stored.length === presented.length;
}
