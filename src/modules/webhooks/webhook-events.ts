/** The contract's events (Events section), in its order, then the service's own. */
export const WEBHOOK_EVENTS = [
  'document.uploaded',
  'document.processed',
  'document.deleted',
  'dataset.created',
  'dataset.updated',
  'dataset.deleted',
  'document.processing_failed',
  'document.updated',
] as const;

export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export function isWebhookEvent(name: string): name is WebhookEvent {
  return (WEBHOOK_EVENTS as readonly string[]).includes(name);
}
