import { WEBHOOK_LIMITS } from 'src/modules/webhooks/webhooks.errors.js';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * What is wrong with a webhook's URL, or null. HTTPS, or plain HTTP to this machine outside
 * production (a receiver under development); no credentials in it (they would be logged and shown in
 * every listing), at most 2,048 characters. Where it may point is decided again at each delivery, from
 * the address its host then resolves to (see `sendDelivery`).
 */
export function webhookUrlIssue(value: string, { production }: { production: boolean }): string | null {
  if (value.length > WEBHOOK_LIMITS.urlCharacters) {
    return `must be at most ${WEBHOOK_LIMITS.urlCharacters.toLocaleString('en-US')} characters`;
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL such as https://example.com/hooks';
  }
  if (url.username || url.password) return 'must not hold credentials';
  if (url.protocol === 'https:') return null;
  if (url.protocol !== 'http:') return 'must be https:// (or http:// to localhost in development)';
  if (production) return 'must be https:// in production';
  if (!LOOPBACK_HOSTS.has(url.hostname)) return 'http:// is allowed only to localhost, outside production';
  return null;
}
