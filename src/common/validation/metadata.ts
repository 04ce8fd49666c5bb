import { registerDecorator, type ValidationOptions } from 'class-validator';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { deeperThan } from 'src/common/validation/json-body.js';
import { codePointCount, jsonValueIssue } from 'src/common/validation/json-value.js';
import type { ErrorCode } from 'src/common/errors/error-codes.js';

/** Limits on the free-form `metadata` object of datasets and documents. */
export const METADATA_LIMITS = { maxKeys: 64, maxBytes: 16 * 1024, maxDepth: 5, maxKeyLength: 256 } as const;

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `{}`: a body that asks nothing, which some clients send with every request. */
export function isEmptyObject(value: unknown): boolean {
  return isPlainObject(value) && Object.keys(value).length === 0;
}

/**
 * Why `value` is not acceptable metadata, or null when it is. The key rules hold at every level, in
 * objects nested in objects and arrays alike: keys are 1-256 characters and do not start with `$`
 * (reserved for filter operators, which reach nested keys by dotted names), and nothing is null.
 * `allowNullValues` lets a PATCH send `null` as a top-level value, to remove that key; deeper down a
 * PATCH replaces a key's value whole (`mergeMetadata`), so a nested null would be stored, not removed.
 */
export function metadataIssue(value: unknown, allowNullValues = false): string | null {
  if (!isPlainObject(value)) return 'must be a JSON object';
  const keys = Object.keys(value);
  if (keys.length > METADATA_LIMITS.maxKeys) return `must have at most ${METADATA_LIMITS.maxKeys} keys`;
  for (const key of keys) {
    const issue = keyRuleIssue(key, '');
    if (issue) return issue;
    if (value[key] === null && !allowNullValues) return `key "${key}" must not be null`;
  }
  // Before walking the nested keys, so that the walk is as shallow as the limit.
  if (deeperThan(value, METADATA_LIMITS.maxDepth)) {
    return `must be nested at most ${METADATA_LIMITS.maxDepth} levels deep`;
  }
  for (const key of keys) {
    const issue = nestedIssue(value[key], key);
    if (issue) return issue;
  }
  if (Buffer.byteLength(JSON.stringify(value)) > METADATA_LIMITS.maxBytes) {
    return `must be at most ${METADATA_LIMITS.maxBytes} bytes as JSON`;
  }
  return jsonValueIssue(value);
}

/** Why an object key breaks the metadata key rules, or null; `parent` is the path of its object. */
function keyRuleIssue(key: string, parent: string): string | null {
  // Characters are code points, as for names: an emoji is one, not two UTF-16 units.
  if (key.length === 0 || codePointCount(key) > METADATA_LIMITS.maxKeyLength) {
    const where = parent ? ` (a key in "${parent}")` : '';
    return `keys must be 1-${METADATA_LIMITS.maxKeyLength} characters${where}`;
  }
  if (key.startsWith('$')) return `key "${parent ? `${parent}.` : ''}${key}" must not start with "$"`;
  return null;
}

/** The key rules and no null, below the top level: in `value`, found at `path` (`a.b[0]`). */
function nestedIssue(value: unknown, path: string): string | null {
  if (Array.isArray(value)) {
    for (const [index, element] of value.entries()) {
      const elementPath = `${path}[${index}]`;
      if (element === null) return `"${elementPath}" must not be null`;
      const issue = nestedIssue(element, elementPath);
      if (issue) return issue;
    }
    return null;
  }
  if (!isPlainObject(value)) return null;
  for (const [key, child] of Object.entries(value)) {
    const issue = keyRuleIssue(key, path);
    if (issue) return issue;
    if (child === null) return `key "${path}.${key}" must not be null`;
    const childIssue = nestedIssue(child, `${path}.${key}`);
    if (childIssue) return childIssue;
  }
  return null;
}

/** Property decorator: a valid metadata object; failures are reported as 400 invalid_metadata. */
export function IsMetadata(
  options: { allowNullValues?: boolean } = {},
  validationOptions?: ValidationOptions,
) {
  return (target: object, propertyName: string) => {
    registerDecorator({
      name: 'isMetadata',
      target: target.constructor,
      propertyName,
      options: { ...validationOptions, context: { code: 'invalid_metadata' satisfies ErrorCode } },
      validator: {
        validate: (value: unknown) => metadataIssue(value, options.allowNullValues) === null,
        defaultMessage: (args) => metadataIssue(args?.value, options.allowNullValues) ?? 'is invalid',
      },
    });
  };
}

/**
 * Applies a PATCH to metadata: keys in `patch` replace, keys set to null are removed. Built with
 * `Object.fromEntries`, which defines every key as a property of its own: assigning a key named
 * `__proto__` would set the object's prototype instead, and the key would be lost.
 */
export function mergeMetadata(current: Record<string, unknown>, patch: Record<string, unknown>) {
  const merged = new Map(Object.entries(current));
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) merged.delete(key);
    else merged.set(key, value);
  }
  return Object.fromEntries(merged) as Record<string, unknown>;
}

/**
 * The metadata a PATCH leaves (`mergeMetadata`), for datasets and documents alike; 400
 * `invalid_metadata` when the result breaks the limits: each half may be within them and their union
 * not (stored metadata over a limit is corrected by the first PATCH that replaces or removes its key).
 */
export function patchedMetadata(
  current: Record<string, unknown>,
  patch: Record<string, unknown>,
): Record<string, unknown> {
  const merged = mergeMetadata(current, patch);
  const issue = metadataIssue(merged);
  if (issue) throw CommonErrors.invalidMetadata(`after merging, ${issue}`);
  return merged;
}
