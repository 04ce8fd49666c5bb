import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { IdempotencyKeyEntity } from 'src/common/idempotency/idempotency-key.entity.js';

/** A claim left pending this long belongs to a request that died; another request may take it over. */
const ABANDONED_AFTER_SECONDS = 60;

export interface Claim {
  accountId: string;
  key: string;
  token: string;
}

/** Storing a completed response failed; the resource it describes was created all the same. */
export class IdempotencyStoreError extends Error {
  constructor(override readonly cause: unknown) {
    super('could not store the idempotent response', { cause });
  }
}

@Injectable()
export class IdempotencyRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Claims (account, key) for a request, atomically: returns the claim's token when this request now
   * owns the key, null when another live record holds it (read it with `find`). An expired record, or
   * a claim abandoned by a request that died, is taken over.
   */
  async claim(accountId: string, key: string, requestHash: Buffer, ttlHours: number): Promise<string | null> {
    const token = randomUUID();
    const rows = await this.db.query<unknown[]>(
      `INSERT INTO idempotency_keys (account_id, key, claim_token, request_hash, state, expires_at)
       VALUES ($1, $2, $3, $4, 'pending', now() + make_interval(hours => $5))
       ON CONFLICT (account_id, key) DO UPDATE
          SET claim_token = EXCLUDED.claim_token, request_hash = EXCLUDED.request_hash, state = 'pending',
              response_body = NULL, created_at = now(), expires_at = EXCLUDED.expires_at
        WHERE idempotency_keys.expires_at < now()
           OR (idempotency_keys.state = 'pending'
               AND idempotency_keys.created_at < now() - make_interval(secs => $6))
       RETURNING key`,
      [accountId, key, token, requestHash, ttlHours, ABANDONED_AFTER_SECONDS],
    );
    return rows.length === 1 ? token : null;
  }

  find(accountId: string, key: string): Promise<IdempotencyKeyEntity | null> {
    return this.db.getRepository(IdempotencyKeyEntity).findOneBy({ accountId, key });
  }

  /**
   * Stores the answer, with the request's fingerprint as now known (a streamed body's is whole only
   * once it has been read) and, for an error answer, its status.
   */
  async complete(
    claim: Claim,
    body: unknown,
    answer: { requestHash?: Buffer; status?: number } = {},
  ): Promise<void> {
    try {
      await this.db.getRepository(IdempotencyKeyEntity).update(
        { accountId: claim.accountId, key: claim.key, claimToken: claim.token },
        {
          state: 'completed',
          responseBody: body as object,
          ...(answer.requestHash ? { requestHash: answer.requestHash } : {}),
          ...(answer.status !== undefined ? { responseStatus: answer.status } : {}),
        },
      );
    } catch (error) {
      throw new IdempotencyStoreError(error);
    }
  }

  /** Gives the key up after a failed request, so that the client can retry with it. */
  async release(claim: Claim): Promise<void> {
    await this.db
      .getRepository(IdempotencyKeyEntity)
      .delete({ accountId: claim.accountId, key: claim.key, claimToken: claim.token, state: 'pending' });
  }

  async deleteExpired(): Promise<number> {
    const result = await this.db
      .getRepository(IdempotencyKeyEntity)
      .createQueryBuilder()
      .delete()
      .where('expires_at < now()')
      .execute();
    return result.affected ?? 0;
  }
}
