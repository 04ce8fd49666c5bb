import { registerDecorator, type ValidationOptions } from 'class-validator';
import { deeperThan } from 'src/common/validation/json-body.js';
import { codePointCount, jsonValueIssue } from 'src/common/validation/json-value.js';

/** Limits on the free-form `metadata` object of datasets and documents. */
export const METADATA_LIMITS = { maxKeys: 64, maxBytes: 16 * 1024, maxDepth: 5, maxKeyLength: 256 } as const;

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Why `value` is not acceptable metadata, or null when it is. Keys starting with `$` are reserved for
 * filter operators; `allowNullValues` lets a PATCH send `null` to remove a key.
 */
export function metadataIssue(value: unknown, allowNullValues = false): string | null {
  if (!isPlainObject(value)) return 'must be a JSON object';
  const keys = Object.keys(value);
  if (keys.length > METADATA_LIMITS.maxKeys) return `must have at most ${METADATA_LIMITS.maxKeys} keys`;
  for (const key of keys) {
    // Characters are code points, as for names: an emoji is one, not two UTF-16 units.
    if (key.length === 0 || codePointCount(key) > METADATA_LIMITS.maxKeyLength) {
      return `keys must be 1-${METADATA_LIMITS.maxKeyLength} characters`;
    }
    if (key.startsWith('$')) return `key "${key}" must not start with "$"`;
    if (value[key] === null && !allowNullValues) return `key "${key}" must not be null`;
  }
  if (deeperThan(value, METADATA_LIMITS.maxDepth)) {
    return `must be nested at most ${METADATA_LIMITS.maxDepth} levels deep`;
  }
  if (Buffer.byteLength(JSON.stringify(value)) > METADATA_LIMITS.maxBytes) {
    return `must be at most ${METADATA_LIMITS.maxBytes} bytes as JSON`;
  }
  return jsonValueIssue(value);
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
      options: { ...validationOptions, context: { code: 'invalid_metadata' } },
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
