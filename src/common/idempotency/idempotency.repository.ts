import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { IdempotencyKeyEntity } from 'src/common/idempotency/idempotency-key.entity.js';

/** A claim left pending this long belongs to a request that died; another request may take it over. */
const ABANDONED_AFTER_SECONDS = 60;

@Injectable()
export class IdempotencyRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Claims (account, key) for a request, atomically: true when this request now owns the key. An
   * expired or abandoned record is taken over; a live one is left alone (read it with `find`).
   */
  async claim(accountId: string, key: string, requestHash: Buffer, ttlHours: number): Promise<boolean> {
    const rows = await this.db.query<unknown[]>(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, state, expires_at)
       VALUES ($1, $2, $3, 'pending', now() + make_interval(hours => $4))
       ON CONFLICT (account_id, key) DO UPDATE
          SET request_hash = EXCLUDED.request_hash, state = 'pending', response_status = NULL,
              response_body = NULL, created_at = now(), expires_at = EXCLUDED.expires_at
        WHERE idempotency_keys.expires_at < now()
           OR (idempotency_keys.state = 'pending'
               AND idempotency_keys.created_at < now() - make_interval(secs => $5))
       RETURNING key`,
      [accountId, key, requestHash, ttlHours, ABANDONED_AFTER_SECONDS],
    );
    return rows.length === 1;
  }

  find(accountId: string, key: string): Promise<IdempotencyKeyEntity | null> {
    return this.db.getRepository(IdempotencyKeyEntity).findOneBy({ accountId, key });
  }

  async complete(accountId: string, key: string, status: number, body: unknown): Promise<void> {
    await this.db
      .getRepository(IdempotencyKeyEntity)
      .update(
        { accountId, key },
        { state: 'completed', responseStatus: status, responseBody: body as object },
      );
  }

  /** Gives the key up after a failed request, so that the client can retry with it. */
  async release(accountId: string, key: string): Promise<void> {
    await this.db.getRepository(IdempotencyKeyEntity).delete({ accountId, key, state: 'pending' });
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
