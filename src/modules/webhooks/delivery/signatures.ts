import { createHmac } from 'node:crypto';

/** The headers that sign one attempt. */
export interface SignedHeaders {
  'X-SERVICE-Signature': string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * Signs a delivery both ways receivers verify it (`secrets`: the newest first):
 * - the contract's `X-SERVICE-Signature`: hex HMAC-SHA256 of the raw body, keyed with the secret as
 *   the receiver was given it (`whsec_...`, the whole string). It has room for one signature, so it is
 *   the oldest secret still signing: during a rotation's grace period the previous one, which
 *   receivers already hold, so that none fails before it has been given the new one;
 * - Standard Webhooks' `webhook-signature`: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`,
 *   keyed with the secret's base64 part decoded, once per secret still signing (the newest, and the
 *   previous during a rotation's grace), space-separated. `webhook-id` is the event's id, the same on
 *   every attempt, for de-duplication; the timestamp lets a receiver refuse replays.
 */
export function signDelivery(
  eventId: string,
  body: string,
  secrets: readonly string[],
  now: Date = new Date(),
): SignedHeaders {
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const signed = `${eventId}.${timestamp}.${body}`;
  return {
    'X-SERVICE-Signature': createHmac('sha256', secrets[secrets.length - 1])
      .update(body)
      .digest('hex'),
    'webhook-id': eventId,
    'webhook-timestamp': timestamp,
    'webhook-signature': secrets
      .map((secret) => `v1,${createHmac('sha256', standardKey(secret)).update(signed).digest('base64')}`)
      .join(' '),
  };
}

/** The key Standard Webhooks signs with: the secret's base64 part, decoded. */
function standardKey(secret: string): Buffer {
  return Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
}
