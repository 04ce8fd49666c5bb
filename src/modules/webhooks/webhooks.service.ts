import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { IdempotentReplays } from 'src/common/idempotency/idempotent-replays.js';
import { isId, newId } from 'src/common/ids/ids.js';
import type { Page } from 'src/common/pagination/pagination.js';
import { TransactionRunner, type Tx } from 'src/database/transaction.js';
import { CORE_CONFIG, type CoreConfig } from 'src/config/core.config.js';
import { WEBHOOKS_CONFIG, type WebhooksConfig } from 'src/modules/webhooks/webhooks.config.js';
import type { AccountPrincipal } from 'src/modules/auth/auth.types.js';
import type { CreateWebhookDto, UpdateWebhookDto } from 'src/modules/webhooks/dto/webhook.dto.js';
import type { WebhookEntity } from 'src/modules/webhooks/webhook.entity.js';
import { isWebhookEvent } from 'src/modules/webhooks/webhook-events.js';
import { newWebhookSecret } from 'src/modules/webhooks/webhook-secrets.js';
import { webhookUrlIssue } from 'src/modules/webhooks/webhook-url.js';
import { WEBHOOK_LIMITS, WebhookErrors } from 'src/modules/webhooks/webhooks.errors.js';
import { type WebhookChanges, WebhooksRepository } from 'src/modules/webhooks/webhooks.repository.js';

/** The replay check of webhook creation (`IdempotentReplays`). */
export const WEBHOOK_CREATED_REPLAY = 'webhooks.created';

/** An account's webhook subscriptions: their rules, limits and secrets. */
@Injectable()
export class WebhooksService implements OnModuleInit {
  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly transactions: TransactionRunner,
    private readonly replays: IdempotentReplays,
    @Inject(WEBHOOKS_CONFIG) private readonly config: WebhooksConfig,
    @Inject(CORE_CONFIG) private readonly core: Pick<CoreConfig, 'nodeEnv'>,
  ) {}

  /** A new webhook with a new secret, within the account's 100, under the account's lock. */
  create(caller: AccountPrincipal, input: CreateWebhookDto): Promise<WebhookEntity> {
    checkUnrestricted(caller);
    this.checkUrl(input.url);
    const events = checkedEvents(input.events);
    return this.transactions.run(async (tx) => {
      const count = await this.webhooks.lockAccount(tx, caller.accountId);
      if (count >= WEBHOOK_LIMITS.perAccount) throw WebhookErrors.limitReached();
      return this.webhooks.insert(tx, {
        id: newId('wh'),
        accountId: caller.accountId,
        url: input.url,
        events,
        description: input.description ?? null,
        active: input.active ?? true,
        secret: newWebhookSecret(),
      });
    });
  }

  list(caller: AccountPrincipal, limit: number, offset: number): Promise<Page<WebhookEntity>> {
    checkUnrestricted(caller);
    return this.webhooks.list(caller.accountId, limit, offset);
  }

  async get(caller: AccountPrincipal, webhookId: string): Promise<WebhookEntity> {
    checkUnrestricted(caller);
    const webhook = isId('wh', webhookId) ? await this.webhooks.find(caller.accountId, webhookId) : null;
    if (!webhook) throw WebhookErrors.notFound(webhookId);
    return webhook;
  }

  /** Only the fields sent change; turning a webhook on clears why the service had turned it off. */
  update(caller: AccountPrincipal, webhookId: string, input: UpdateWebhookDto): Promise<WebhookEntity> {
    checkUnrestricted(caller);
    if (input.url !== undefined) this.checkUrl(input.url);
    const events = input.events === undefined ? undefined : checkedEvents(input.events);
    return this.transactions.run(async (tx) => {
      const webhook = await this.lockOwn(caller, webhookId, tx);
      const changes: WebhookChanges = {};
      if (input.url !== undefined) changes.url = input.url;
      if (events !== undefined) changes.events = events;
      if (input.description !== undefined) changes.description = input.description;
      if (input.active !== undefined) {
        changes.active = input.active;
        // Turned on again: its failure rate starts afresh (see recentOutcomes).
        if (input.active && !webhook.active) {
          changes.disabledReason = null;
          changes.enabledAt = new Date();
        }
      }
      if (Object.keys(changes).length === 0) return webhook;
      return this.webhooks.update(tx, webhook, changes);
    });
  }

  async delete(caller: AccountPrincipal, webhookId: string): Promise<void> {
    checkUnrestricted(caller);
    const deleted = isId('wh', webhookId) && (await this.webhooks.delete(caller.accountId, webhookId));
    if (!deleted) throw WebhookErrors.notFound(webhookId);
  }

  /**
   * A new secret. The one it replaces keeps signing beside it (in `webhook-signature`) for
   * `graceHours` (`WEBHOOK_SECRET_GRACE_HOURS` by default), so that receivers switch without a
   * delivery they cannot verify; with 0 it stops at once, and so does any earlier one still in grace.
   */
  rotateSecret(
    caller: AccountPrincipal,
    webhookId: string,
    graceHours = this.config.secretGraceHours,
  ): Promise<WebhookEntity> {
    checkUnrestricted(caller);
    return this.transactions.run(async (tx) => {
      const webhook = await this.lockOwn(caller, webhookId, tx);
      return this.webhooks.update(tx, webhook, {
        secret: newWebhookSecret(),
        previousSecret: graceHours > 0 ? webhook.secret : null,
        previousSecretExpiresAt: graceHours > 0 ? new Date(Date.now() + graceHours * 3_600_000) : null,
      });
    });
  }

  /**
   * A replay of a creating request (`Idempotency-Key`) shows the webhook as first answered, but its
   * secret only while the webhook still has it: never one since rotated away, nor a deleted webhook's.
   */
  private async replayCreated(accountId: string, body: unknown): Promise<unknown> {
    const created = body as { webhook_id: string; secret?: string };
    const webhook = isId('wh', created.webhook_id)
      ? await this.webhooks.find(accountId, created.webhook_id)
      : null;
    if (webhook?.secret === created.secret) return body;
    const withheld: Partial<typeof created> = { ...created };
    delete withheld.secret;
    return withheld;
  }

  onModuleInit(): void {
    this.replays.register(WEBHOOK_CREATED_REPLAY, (accountId, body) => this.replayCreated(accountId, body));
  }

  private async lockOwn(caller: AccountPrincipal, webhookId: string, tx: Tx): Promise<WebhookEntity> {
    const webhook = isId('wh', webhookId)
      ? await this.webhooks.findForUpdate(tx, caller.accountId, webhookId)
      : null;
    if (!webhook) throw WebhookErrors.notFound(webhookId);
    return webhook;
  }

  private checkUrl(url: string): void {
    const issue = webhookUrlIssue(url, { production: this.core.nodeEnv === 'production' });
    if (issue) throw WebhookErrors.invalidUrl(issue);
  }
}

/**
 * Webhooks carry the events of every dataset of the account, which a token granted for chosen datasets
 * must not see.
 */
function checkUnrestricted(caller: AccountPrincipal): void {
  if (caller.datasetIds !== null) throw WebhookErrors.grantRestricted();
}

/** The events asked for, each once, in the order sent; 400 invalid_events for any other name. */
function checkedEvents(events: string[]): string[] {
  const unknown = events.filter((name) => !isWebhookEvent(name));
  if (unknown.length > 0 || events.length === 0) throw WebhookErrors.invalidEvents(unknown);
  return [...new Set(events)];
}
