import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Page } from 'src/common/pagination/pagination.js';
import { pagedQuery } from 'src/database/paged-query.js';
import type { Tx } from 'src/database/transaction.js';
import { WebhookEntity } from 'src/modules/webhooks/webhook.entity.js';

export type NewWebhook = Pick<
  WebhookEntity,
  'id' | 'accountId' | 'url' | 'events' | 'description' | 'active' | 'secret'
>;

export type WebhookChanges = Partial<
  Pick<
    WebhookEntity,
    | 'url'
    | 'events'
    | 'description'
    | 'active'
    | 'disabledReason'
    | 'enabledAt'
    | 'secret'
    | 'previousSecret'
    | 'previousSecretExpiresAt'
  >
>;

/** An account's webhooks. Every query names the account: no other account's webhook is ever read. */
@Injectable()
export class WebhooksRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Locks the account's webhooks against a concurrent creation, so that the count stays within its limit. */
  async lockAccount(tx: Tx, accountId: string): Promise<number> {
    await tx.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [accountId]);
    const [{ count }] = await tx.query<{ count: number }[]>(
      `SELECT count(*)::int AS count FROM webhooks WHERE account_id = $1`,
      [accountId],
    );
    return count;
  }

  async insert(tx: Tx, webhook: NewWebhook): Promise<WebhookEntity> {
    await tx.getRepository(WebhookEntity).insert(webhook);
    return tx.getRepository(WebhookEntity).findOneByOrFail({ id: webhook.id });
  }

  list(accountId: string, limit: number, offset: number): Promise<Page<WebhookEntity>> {
    const query = this.db
      .getRepository(WebhookEntity)
      .createQueryBuilder('w')
      .where('w.account_id = :accountId', { accountId });
    return pagedQuery(query, { 'w.created_at': 'DESC', 'w.id': 'DESC' }, limit, offset);
  }

  find(accountId: string, webhookId: string): Promise<WebhookEntity | null> {
    return this.db.getRepository(WebhookEntity).findOneBy({ id: webhookId, accountId });
  }

  findForUpdate(tx: Tx, accountId: string, webhookId: string): Promise<WebhookEntity | null> {
    return tx
      .getRepository(WebhookEntity)
      .createQueryBuilder('w')
      .setLock('pessimistic_write')
      .where('w.id = :webhookId AND w.account_id = :accountId', { webhookId, accountId })
      .getOne();
  }

  async update(tx: Tx, webhook: WebhookEntity, changes: WebhookChanges): Promise<WebhookEntity> {
    await tx
      .getRepository(WebhookEntity)
      .update({ id: webhook.id, accountId: webhook.accountId }, { ...changes, updatedAt: () => 'now()' });
    return tx.getRepository(WebhookEntity).findOneByOrFail({ id: webhook.id });
  }

  /** Deletes the webhook with its deliveries and their attempts (by cascade); false if it was not there. */
  async delete(accountId: string, webhookId: string): Promise<boolean> {
    const result = await this.db.getRepository(WebhookEntity).delete({ id: webhookId, accountId });
    return (result.affected ?? 0) > 0;
  }
}
