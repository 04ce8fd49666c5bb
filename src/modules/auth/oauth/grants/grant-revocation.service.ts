import { Injectable } from '@nestjs/common';
import type { Tx } from 'src/database/transaction.js';
import { GrantsRepository } from 'src/modules/auth/oauth/grants/grants.repository.js';

/**
 * What the users module asks of OAuth: to revoke every grant of a person, and with them every token
 * of theirs (token checks read the grant), when they are disabled or their password changes.
 */
@Injectable()
export class GrantRevocationService {
  constructor(private readonly grants: GrantsRepository) {}

  /** Revokes the user's grants in `tx` (or on its own when null); returns how many stood. */
  revokeAllOf(tx: Tx | null, userId: string): Promise<number> {
    return this.grants.revokeAllForUser(tx, userId);
  }
}
