import { registerDecorator, type ValidationOptions } from 'class-validator';

/** A UTF-16 surrogate without its other half: not a character, and not valid in UTF-8. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Why a string cannot be stored in PostgreSQL as sent, or null when it can: `text` and `jsonb` hold
 * no U+0000, and `jsonb` refuses the `\uD800`-style escape that `JSON.stringify` writes for a lone
 * surrogate (where a `text` parameter would silently get U+FFFD instead).
 */
export function stringIssue(value: string): string | null {
  if (value.includes('\u0000')) return 'must not contain the character U+0000';
  if (LONE_SURROGATE.test(value)) return 'must not contain unpaired UTF-16 surrogates';
  return null;
}

/** Where a parsed input holds a string PostgreSQL cannot store as sent, and why. */
export interface TextIssue {
  /** Dotted path from the input's root (`contacts[1]`, `arguments.query`); `''` for the root itself. */
  field: string;
  issue: string;
}

/**
 * The first string of a parsed input (a JSON body, a form, a query string, a path parameter), value
 * or object key, that `stringIssue` refuses, with where it is; null when there is none. Every input a
 * route reads is checked with this once (`AppValidationPipe`, and the MCP endpoint for its messages),
 * so that no such string reaches the database to fail there. Callers bound the depth first (bodies are
 * bounded by `rejectAbsurdBodies`).
 */
export function textIssueIn(value: unknown, path = ''): TextIssue | null {
  if (typeof value === 'string') {
    const issue = stringIssue(value);
    return issue ? { field: path, issue } : null;
  }
  if (typeof value !== 'object' || value === null || Buffer.isBuffer(value)) return null;
  const list = Array.isArray(value);
  for (const [key, child] of Object.entries(value)) {
    const childPath = list ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    const keyProblem = list ? null : stringIssue(key);
    if (keyProblem) return { field: path || 'body', issue: `keys ${keyProblem}` };
    const found = textIssueIn(child, childPath);
    if (found) return found;
  }
  return null;
}

/**
 * A property decorator from a rule that says what is wrong with a string, or null; values of other
 * types pass, for the type's own rule to refuse.
 */
function stringRule(name: string, issue: (value: string) => string | null) {
  return (validationOptions?: ValidationOptions) => (target: object, propertyName: string) => {
    registerDecorator({
      name,
      target: target.constructor,
      propertyName,
      options: validationOptions,
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || issue(value) === null,
        defaultMessage: (args) => issue(String(args?.value)) ?? 'is invalid',
      },
    });
  };
}

/**
 * A character that shows: not white space, a control (Cc) or format (Cf) character, nor one that
 * Unicode says to render as nothing when unsupported (Default_Ignorable_Code_Point: the Hangul fillers
 * U+115F, U+1160, U+3164 and U+FFA0, the combining grapheme joiner, variation selectors, U+17B4 and
 * U+17B5, ...), nor the braille pattern blank U+2800 and the object replacement character U+FFFC,
 * which render as blank space or as a placeholder for something that is not there.
 */
const VISIBLE = /[^\p{White_Space}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2800\uFFFC]/u;

/**
 * Whether a text has anything to read. `trim` leaves zero-width spaces (U+200B), joiners and byte order
 * marks: a file of them alone became a ready document of one invisible chunk. So did the Hangul filler
 * U+3164 alone, which is neither white space nor a format character.
 */
export function isVisibleText(text: string): boolean {
  return VISIBLE.test(text);
}

/**
 * A control character (Unicode Cc: C0, DEL and C1, the terminal's escape U+001B among them), or a
 * line or paragraph separator (U+2028, U+2029), which break a line as a newline does.
 */
const CONTROL = /[\p{Cc}\p{Zl}\p{Zp}]/u;

/**
 * Why a string cannot be a label people read in a list (a dataset's name), or null when it can: no
 * control characters (a bell, or an escape sequence that recolours a terminal which prints the list;
 * a tab or newline inside one line), and something visible (`isVisibleText`): `\u200b` or `\u00ad`
 * alone names nothing a person could tell apart or type.
 */
export function labelIssue(value: string): string | null {
  if (CONTROL.test(value)) return 'must not contain control characters';
  if (!isVisibleText(value)) return 'must contain visible text';
  return null;
}

/** Property decorator: a label as `labelIssue` has it. */
export const IsVisibleLabel = stringRule('isVisibleLabel', labelIssue);

/**
 * The characters of a string as the API's limits count them: Unicode code points (a surrogate pair is
 * one, as an emoji is; a lone surrogate is one too), counted without copying the string into an array
 * (`[...value].length` would, for a body of megabytes).
 */
export function codePointCount(value: string): number {
  let pairs = 0;
  for (let i = 0; i < value.length - 1; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        pairs++;
        i++;
      }
    }
  }
  return value.length - pairs;
}

/**
 * Property decorator: a string of `min` to `max` characters as `codePointCount` counts them. (class-
 * validator's `Length` counts UTF-16 units less surrogate pairs and less the variation selectors
 * U+FE0E and U+FE0F after another character, so 200 `a\uFE0F` passed for 200 characters and stored
 * 400.) Other types pass, for the type's own rule to refuse.
 */
export function CodePointLength(min: number, max: number, validationOptions?: ValidationOptions) {
  return (target: object, propertyName: string) => {
    registerDecorator({
      name: 'codePointLength',
      target: target.constructor,
      propertyName,
      constraints: [min, max],
      options: validationOptions,
      validator: {
        validate: (value: unknown) => {
          if (typeof value !== 'string') return true;
          if (value.length > 2 * max) return false; // a code point is one or two UTF-16 units
          const characters = codePointCount(value);
          return characters >= min && characters <= max;
        },
        defaultMessage: () => `must be ${min}-${max} characters`,
      },
    });
  };
}

/**
 * Keys that JavaScript code can mistake for an object's own machinery: assigned to an object,
 * `__proto__` replaces its prototype, and a `constructor` that is not a function crashes
 * class-transformer. Nest's validation pipe deletes them silently; `AppValidationPipe` refuses a
 * request that holds one anywhere (`reservedKeyPath`), so that nothing a client sent is lost unseen.
 */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** The path of the first reserved key in a parsed JSON value (`metadata.a[0].constructor`), or null. */
export function reservedKeyPath(value: unknown, path = ''): string | null {
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, child] of Object.entries(value)) {
    const childPath = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    if (!Array.isArray(value) && RESERVED_KEYS.has(key)) return childPath;
    const found = reservedKeyPath(child, childPath);
    if (found) return found;
  }
  return null;
}

/** Why an object key is refused, or null. */
export function keyIssue(key: string): string | null {
  if (RESERVED_KEYS.has(key)) return `must not use the reserved key "${key}"`;
  return stringIssue(key);
}

/**
 * Why a parsed JSON value cannot be stored as `jsonb` as it was sent, or null when it can: its keys
 * as in `keyIssue`, its strings as in `stringIssue`, and no number beyond double precision (`1e400`
 * parses as Infinity, which `JSON.stringify` would silently turn into null). Never recurses deeper
 * than the value nests: callers bound the depth first.
 */
export function jsonValueIssue(value: unknown): string | null {
  if (typeof value === 'string') return stringIssue(value);
  if (typeof value === 'number') {
    return Number.isFinite(value) ? null : 'must not hold numbers beyond ±1.8e308';
  }
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, child] of Object.entries(value)) {
    const issue = (Array.isArray(value) ? null : keyIssue(key)) ?? jsonValueIssue(child);
    if (issue) return issue;
  }
  return null;
}
