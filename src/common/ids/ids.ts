import { randomBytes } from 'node:crypto';

/**
 * Public identifiers are opaque strings: a type prefix, an underscore and 22 base62 characters drawn
 * from 128 random bits (`ds_4Jq0...`). The prefix tells a human what an id names and lets the API reject
 * an id of the wrong type without a database round trip.
 */
export type IdPrefix = 'acc' | 'key' | 'ds' | 'doc' | 'chk' | 'wh' | 'evt';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 22;

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBase62(16, BODY_LENGTH)}`;
}

/** Base62 of `bytes` random bytes, left-padded to `length` characters. */
export function randomBase62(bytes: number, length: number): string {
  let value = BigInt(`0x${randomBytes(bytes).toString('hex')}`);
  let out = '';
  while (value > 0n) {
    out = ALPHABET[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out.padStart(length, '0');
}

const ID_PATTERN = /^([a-z]+)_([0-9A-Za-z]{22})$/;

/** True when `value` is an id of the given type. */
export function isId(prefix: IdPrefix, value: string): boolean {
  const match = ID_PATTERN.exec(value);
  return match !== null && match[1] === prefix;
}
