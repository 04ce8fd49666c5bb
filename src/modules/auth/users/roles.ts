import { type Scope, SCOPES } from 'src/modules/auth/auth.types.js';

/** What a person may do in their account; a role stands for a set of the API's scopes. */
export const ROLES = ['admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

const READ_SCOPES: readonly Scope[] = ['datasets:read', 'documents:read', 'search'];

/**
 * `admin` holds every scope of the API, and is the role that manages the account's users (on the
 * command line) and its webhooks, which send the account's events elsewhere. `member` works with
 * datasets and documents; `viewer` reads and searches.
 */
export const ROLE_SCOPES: Readonly<Record<Role, readonly Scope[]>> = {
  admin: SCOPES,
  member: SCOPES.filter((scope) => !scope.startsWith('webhooks:')),
  viewer: READ_SCOPES,
};

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}
