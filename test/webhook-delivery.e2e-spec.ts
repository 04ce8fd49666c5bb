import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { createDataset, waitForDocument } from './utils/documents.js';
import { type Received, Receiver } from './utils/receiver.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { until } from './utils/until.js';

const ALL_EVENTS = [
  'document.uploaded',
  'document.processed',
  'document.deleted',
  'dataset.created',
  'dataset.updated',
  'dataset.deleted',
  'document.processing_failed',
];

interface Delivery {
  status: string;
  attempts: number;
}

/** Waits for `count` requests of `event` at the receiver (deliveries arrive in the background). */
async function arrived(receiver: Receiver, event: string, count = 1): Promise<Received[]> {
  await until(() => receiver.of(event).length >= count, 20_000);
  return receiver.of(event);
}

describe('Webhook delivery', () => {
  let t: TestApp;
  let key: CreatedKey;
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start();
    t = await startTestApp({
      WEBHOOK_DISPATCH_INTERVAL_MS: '50',
      WEBHOOK_SWEEP_SECONDS: '1',
      WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1',
      WEBHOOK_TIMEOUT_MS: '1000',
    });
    key = await t.createApiKey();
  });
  afterEach(async () => {
    // Each test's webhooks go with it, so that the next one hears only its own.
    await t.sql.query('DELETE FROM webhooks');
    receiver.received.length = 0;
    receiver.answer = () => ({ status: 200 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.stop();
  });

  async function subscribe(
    events = ALL_EVENTS,
    path = '/hooks',
  ): Promise<{ webhook_id: string; secret: string }> {
    const response = await t.http
      .post('/v1/webhooks')
      .set(bearer(key))
      .send({ url: `${receiver.url}${path}`, events })
      .expect(201);
    return response.body as { webhook_id: string; secret: string };
  }

  async function deliveriesOf(webhookId: string): Promise<Delivery[]> {
    const { rows } = await t.sql.query<Delivery>(
      'SELECT status, attempts FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY seq',
      [webhookId],
    );
    return rows;
  }

  it('delivers every event, signed the contract’s way and the Standard Webhooks way', async () => {
    const webhook = await subscribe(ALL_EVENTS, '/all');
    const datasetId = await createDataset(t.http, key, { name: 'Events' });
    await t.http
      .patch(`/v1/datasets/${datasetId}`)
      .set(bearer(key))
      .send({ description: 'changed' })
      .expect(200);
    const good = await t.http
      .post(`/v1/datasets/${datasetId}/documents`)
      .set(bearer(key))
      .send({ content: 'The ferry leaves at noon.', metadata: { title: 'Ferry' } })
      .expect(201);
    const empty = await t.http
      .post(`/v1/datasets/${datasetId}/documents`)
      .set(bearer(key))
      .attach('file', readFileSync('../shared/fixtures/pdf/encrypted-password.pdf'), 'locked.pdf')
      .expect(201);
    await waitForDocument(t.http, key, datasetId, good.body.document_id as string);
    await waitForDocument(t.http, key, datasetId, empty.body.document_id as string);
    await t.http
      .delete(`/v1/datasets/${datasetId}/documents/${good.body.document_id}`)
      .set(bearer(key))
      .expect(204);
    await t.http.delete(`/v1/datasets/${datasetId}`).set(bearer(key)).expect(204);

    for (const event of ALL_EVENTS) await arrived(receiver, event, event === 'document.uploaded' ? 2 : 1);
    const verifier = new Webhook(webhook.secret);
    for (const request of receiver.received) {
      expect(request.path).toBe('/all');
      expect(request.headers).toMatchObject({
        'content-type': 'application/json',
        'user-agent': 'SERVICE-Webhooks/1.0',
        'x-service-event': request.body.event,
        'x-service-delivery': expect.stringMatching(/^att_/),
        'webhook-id': request.body.id,
      });
      // The contract's signature, recomputed over the raw body; and Standard Webhooks' library.
      expect(request.headers['x-service-signature']).toBe(
        createHmac('sha256', webhook.secret).update(request.raw).digest('hex'),
      );
      expect(verifier.verify(request.raw, request.headers as Record<string, string>)).toEqual(request.body);
      expect(request.body).toMatchObject({
        id: expect.stringMatching(/^evt_/),
        timestamp: expect.any(String),
      });
    }
    expect((await arrived(receiver, 'dataset.created'))[0].body.data).toEqual({
      dataset_id: datasetId,
      name: 'Events',
      description: null,
      is_public: false,
      created_by: key.key_id,
    });
    expect((await arrived(receiver, 'dataset.updated'))[0].body.data).toEqual({
      dataset_id: datasetId,
      changes: { description: 'changed' },
      updated_by: key.key_id,
    });
    expect((await arrived(receiver, 'document.processed'))[0].body.data).toMatchObject({
      document_id: good.body.document_id,
      dataset_id: datasetId,
      chunks_created: 1,
      status: 'ready',
      processing_time_ms: expect.any(Number),
    });
    expect((await arrived(receiver, 'document.processing_failed'))[0].body.data).toMatchObject({
      document_id: empty.body.document_id,
      error: { code: 'invalid_pdf' },
    });
    expect((await arrived(receiver, 'dataset.deleted'))[0].body.data).toEqual({
      dataset_id: datasetId,
      document_count: 1,
      deleted_by: key.key_id,
    });
    // A document's events arrive in the order they happened.
    const ofGood = receiver.received
      .filter((r) => r.body.data.document_id === good.body.document_id)
      .map((r) => r.body.event);
    expect(ofGood).toEqual(['document.uploaded', 'document.processed', 'document.deleted']);
  });

  it('retries a 5xx and a receiver too slow to answer, and gives up on a 4xx at once', async () => {
    const webhook = await subscribe(['dataset.created'], '/flaky');
    let calls = 0;
    receiver.answer = () => {
      calls++;
      if (calls === 1) return { status: 503 };
      if (calls === 2) return { status: 200, delayMs: 1_500 }; // past WEBHOOK_TIMEOUT_MS
      return { status: 204 };
    };
    await createDataset(t.http, key);
    await arrived(receiver, 'dataset.created', 3);
    await until(async () => (await deliveriesOf(webhook.webhook_id))[0]?.status === 'delivered', 10_000);
    expect(await deliveriesOf(webhook.webhook_id)).toEqual([{ status: 'delivered', attempts: 3 }]);
    // The same event on every attempt, each attempt named apart.
    const attempts = receiver.of('dataset.created');
    expect(new Set(attempts.map((r) => r.body.id)).size).toBe(1);
    expect(new Set(attempts.map((r) => r.headers['x-service-delivery'])).size).toBe(3);

    receiver.received.length = 0;
    receiver.answer = () => ({ status: 400, body: 'no thanks' });
    await createDataset(t.http, key);
    await until(async () => (await deliveriesOf(webhook.webhook_id))[1]?.status === 'failed', 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // a retry would come after 1 s
    expect(receiver.of('dataset.created')).toHaveLength(1);
    const { rows } = await t.sql.query(
      `SELECT a.status_code, a.response_body FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
        WHERE d.webhook_id = $1 AND a.status_code = 400`,
      [webhook.webhook_id],
    );
    expect(rows).toEqual([{ status_code: 400, response_body: 'no thanks' }]);
  });

  it('gets an event to a receiver that was down, once it is back within the retries', async () => {
    const down = new Receiver();
    await down.start();
    const port = down.port;
    await down.stop();
    const response = await t.http
      .post('/v1/webhooks')
      .set(bearer(key))
      .send({ url: `http://127.0.0.1:${port}/back`, events: ['dataset.created'] })
      .expect(201);
    await createDataset(t.http, key);
    await until(
      async () => (await deliveriesOf(response.body.webhook_id as string))[0]?.attempts >= 1,
      10_000,
    );
    const back = await new Receiver().start(port);
    try {
      await arrived(back, 'dataset.created');
      await until(
        async () => (await deliveriesOf(response.body.webhook_id as string))[0]?.status === 'delivered',
      );
    } finally {
      await back.stop();
    }
  });

  it('does not follow redirects', async () => {
    const webhook = await subscribe(['dataset.created'], '/moved');
    receiver.answer = (request) =>
      request.path === '/moved'
        ? { status: 302, headers: { Location: `${receiver.url}/elsewhere` } }
        : { status: 200 };
    await createDataset(t.http, key);
    await until(async () => (await deliveriesOf(webhook.webhook_id))[0]?.status === 'failed', 10_000);
    expect(receiver.received.map((r) => r.path)).toEqual(['/moved']);
  });
});
