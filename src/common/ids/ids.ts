import { randomBytes } from 'node:crypto';

/**
 * Public identifiers are opaque strings: a type prefix, an underscore and 22 random base62 characters,
 * 131 bits (`ds_4Jq0...`). The prefix tells a human what an id names and lets the API reject an id of
 * the wrong type without a database round trip.
 */
export type IdPrefix =
  'acc' | 'key' | 'usr' | 'cli' | 'grt' | 'tok' | 'ds' | 'doc' | 'chk' | 'wh' | 'evt' | 'dlv' | 'att';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BODY_LENGTH = 22;
/** Random bytes at or above this are drawn again, so that each character is equally likely. */
const UNBIASED_BELOW = 62 * 4;

/**
 * Random bytes are read from the system in blocks, not for each id: a document's chunks take tens of
 * thousands of ids at once, and a call for 16 bytes cost as much as the rest of making the id.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let next = 0;

function randomByte(): number {
  if (next === pool.length) {
    pool = randomBytes(POOL_BYTES);
    next = 0;
  }
  const byte = pool[next];
  pool[next++] = 0; // once used, not left in memory (it may be part of an API key's secret)
  return byte;
}

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBase62(BODY_LENGTH)}`;
}

/** `length` random base62 characters, each carrying log2(62), about 5.95, bits. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    if (byte < UNBIASED_BELOW) out += ALPHABET[byte % 62];
  }
  return out;
}

const ID_PATTERN = /^([a-z]+)_([0-9A-Za-z]{22})$/;

/** True when `value` is an id of the given type. */
export function isId(prefix: IdPrefix, value: string): boolean {
  const match = ID_PATTERN.exec(value);
  return match !== null && match[1] === prefix;
}

/** The longest id an error echoes whole: ids are 25 characters; a caller may send anything. */
const SHOWN_ID_LENGTH = 64;

/**
 * An id as an error shows it back, cut short: a caller may send a 5,000-character one, which the
 * answer would otherwise hold twice (in the message and in `details`).
 */
export function shownId(value: string): string {
  if (value.length <= SHOWN_ID_LENGTH) return value;
  // Cut between characters: half of a surrogate pair is refused everywhere else.
  const end = isHighSurrogate(value.charCodeAt(SHOWN_ID_LENGTH - 1)) ? SHOWN_ID_LENGTH - 1 : SHOWN_ID_LENGTH;
  return `${value.slice(0, end)}…`;
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}
