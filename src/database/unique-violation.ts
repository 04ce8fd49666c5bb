import { QueryFailedError } from 'typeorm';

/** Citus names a shard's copy of a constraint after it, with the shard's id: `<name>_102008`. */
const SHARD_SUFFIX = /_\d+$/;

/**
 * True when a statement failed on the unique constraint or index `name`. A violation raised on a
 * Citus worker comes back without the `constraint` field, its name (the shard's) only in the message.
 */
export function isUniqueViolation(error: unknown, name: string): boolean {
  if (!(error instanceof QueryFailedError)) return false;
  const driverError = error.driverError as { code?: string; constraint?: string; message?: string };
  if (driverError.code !== '23505') return false;
  const violated =
    driverError.constraint ?? /unique constraint "([^"]+)"/.exec(driverError.message ?? '')?.[1];
  return violated === name || violated?.replace(SHARD_SUFFIX, '') === name;
}
