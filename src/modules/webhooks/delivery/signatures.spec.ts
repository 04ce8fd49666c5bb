import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret } from 'src/modules/webhooks/webhook-secrets.js';
import { signDelivery } from 'src/modules/webhooks/delivery/signatures.js';

describe('signDelivery', () => {
  const body = JSON.stringify({ id: 'evt_1', event: 'dataset.created', data: { name: 'é' } });

  it("signs the contract's way: hex HMAC-SHA256 of the raw body, keyed with the secret", () => {
    const secret = newWebhookSecret();
    const headers = signDelivery('evt_1', body, [secret]);
    expect(headers['X-SERVICE-Signature']).toBe(createHmac('sha256', secret).update(body).digest('hex'));
  });

  it('signs the Standard Webhooks way, verified by the standardwebhooks package, with every secret', () => {
    const [current, previous] = [newWebhookSecret(), newWebhookSecret()];
    const headers = signDelivery('evt_1', body, [current, previous]);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of [current, previous]) {
      expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    }
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(current).verify(`${body} `, headers)).toThrow();
  });
});
