import { randomBytes } from 'node:crypto';

/**
 * A signing secret in Standard Webhooks' form: `whsec_` and 24 random bytes in base64 (192 bits), which
 * the `standardwebhooks` libraries take as they are.
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}
