import { AppError } from 'src/common/errors/app-error.js';
import { shownId } from 'src/common/ids/ids.js';
import { WEBHOOK_EVENTS } from 'src/modules/webhooks/webhook-events.js';

export const WEBHOOK_LIMITS = {
  perAccount: 100,
  urlCharacters: 2_048,
  descriptionCharacters: 1_000,
} as const;

export const WebhookErrors = {
  notFound: (webhookId: string) =>
    new AppError(404, 'webhook_not_found', `Webhook "${shownId(webhookId)}" not found`, {
      webhook_id: shownId(webhookId),
    }),
  limitReached: () =>
    new AppError(
      422,
      'webhook_limit_reached',
      `An account can hold at most ${WEBHOOK_LIMITS.perAccount} webhooks; delete one to create another`,
      { limit: WEBHOOK_LIMITS.perAccount },
    ),
  invalidEvents: (unknown: string[]) =>
    new AppError(
      400,
      'invalid_events',
      unknown.length > 0 ? `Unknown events: ${unknown.join(', ')}` : 'events must name at least one event',
      { field: 'events', unknown, allowed: WEBHOOK_EVENTS },
    ),
  grantRestricted: () =>
    new AppError(
      403,
      'grant_restricted',
      'This token was granted for chosen datasets only; webhooks carry the events of every dataset of the account',
    ),
  invalidUrl: (issue: string) =>
    new AppError(400, 'invalid_webhook_url', `Invalid webhook url: ${issue}`, { field: 'url', issue }),
};

export const DeliveryErrors = {
  notFound: (deliveryId: string) =>
    new AppError(404, 'delivery_not_found', `Delivery "${deliveryId.slice(0, 64)}" not found`, {
      delivery_id: deliveryId.slice(0, 64),
    }),
};
