import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { createDataset, waitForDocument } from './utils/documents.js';
import { type Received, Receiver } from './utils/receiver.js';
import request from 'supertest';
import {
  bearer,
  type CreatedKey,
  freePort,
  startProcess,
  startTestApp,
  type TestApp,
} from './utils/test-app.js';
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

  it("holds a document's later events back while an earlier one is being retried", async () => {
    await subscribe(['document.uploaded', 'document.processed'], '/ordered');
    let refused = false;
    receiver.answer = (request) => {
      if (request.body.event !== 'document.uploaded' || refused) return { status: 200 };
      refused = true;
      return { status: 503 }; // retried after 1 s, by which time the document is processed
    };
    const datasetId = await createDataset(t.http, key);
    const uploaded = await t.http
      .post(`/v1/datasets/${datasetId}/documents`)
      .set(bearer(key))
      .send({ content: 'Ordered events.' })
      .expect(201);
    await waitForDocument(t.http, key, datasetId, uploaded.body.document_id as string);
    await arrived(receiver, 'document.processed');
    expect(receiver.received.map((r) => r.body.event)).toEqual([
      'document.uploaded',
      'document.uploaded',
      'document.processed',
    ]);
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

describe('Webhook delivery log, tests and rotation', () => {
  let t: TestApp;
  let key: CreatedKey;
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start();
    t = await startTestApp({ WEBHOOK_DISPATCH_INTERVAL_MS: '50', WEBHOOK_SWEEP_SECONDS: '1' });
    key = await t.createApiKey();
  });
  afterAll(async () => {
    await t.close();
    await receiver.stop();
  });

  it('logs each delivery with its attempts, filters by status, and sends one again', async () => {
    const { body: webhook } = await t.http
      .post('/v1/webhooks')
      .set(bearer(key))
      .send({ url: `${receiver.url}/log`, events: ['dataset.created'] })
      .expect(201);
    receiver.answer = () => ({ status: 202, body: 'ok'.repeat(1000) });
    await createDataset(t.http, key);
    const [first] = await arrived(receiver, 'dataset.created');
    const path = `/v1/webhooks/${webhook.webhook_id}/deliveries`;
    await until(
      async () => (await t.http.get(path).set(bearer(key))).body.deliveries[0]?.status === 'delivered',
    );
    const log = await t.http.get(`${path}?status=delivered`).set(bearer(key)).expect(200);
    expect(log.body).toMatchObject({ total: 1, has_more: false });
    const [delivery] = log.body.deliveries;
    expect(delivery).toMatchObject({
      delivery_id: expect.stringMatching(/^dlv_/),
      event_id: first.body.id,
      event: 'dataset.created',
      status: 'delivered',
      attempts: [
        {
          attempt_id: first.headers['x-service-delivery'],
          attempt: 1,
          outcome: 'delivered',
          status_code: 202,
          error: null,
          duration_ms: expect.any(Number),
        },
      ],
    });
    expect(delivery.attempts[0].response_body).toHaveLength(1024);
    expect((await t.http.get(`${path}?status=failed`).set(bearer(key)).expect(200)).body.total).toBe(0);

    const again = await t.http.post(`${path}/${delivery.delivery_id}/redeliver`).set(bearer(key)).expect(202);
    expect(again.body).toMatchObject({ event_id: first.body.id, status: 'pending', attempts: [] });
    const both = await arrived(receiver, 'dataset.created', 2);
    expect(both[1].raw).toBe(first.raw); // the same event, byte for byte
    await t.http.post(`${path}/dlv_0000000000000000000000/redeliver`).set(bearer(key)).expect(404);
    const other = await t.createApiKey();
    await t.http.get(path).set(bearer(other)).expect(404);
  });

  it('sends a test delivery and answers how it went', async () => {
    const { body: webhook } = await t.http
      .post('/v1/webhooks')
      .set(bearer(key))
      .send({ url: `${receiver.url}/test`, events: ['dataset.created'], active: false })
      .expect(201);
    receiver.answer = () => ({ status: 418, body: 'teapot' });
    const tested = await t.http
      .post('/v1/webhooks/test')
      .set(bearer(key))
      .send({ webhook_id: webhook.webhook_id, event: 'document.processing_failed' })
      .expect(200);
    expect(tested.body).toMatchObject({
      webhook_id: webhook.webhook_id,
      event: 'document.processing_failed',
      delivered: false,
      status_code: 418,
      response_body: 'teapot',
    });
    const [request] = receiver.of('document.processing_failed');
    expect(
      new Webhook(webhook.secret).verify(request.raw, request.headers as Record<string, string>),
    ).toMatchObject({
      data: { error: { code: 'invalid_pdf' } },
    });
    const refused = await t.http
      .post('/v1/webhooks/test')
      .set(bearer(key))
      .send({ webhook_id: webhook.webhook_id, event: 'document.exploded' })
      .expect(400);
    expect(refused.body.details.field).toBe('event');
  });

  it('signs with both secrets while a rotation is in its grace period', async () => {
    const { body: webhook } = await t.http
      .post('/v1/webhooks')
      .set(bearer(key))
      .send({ url: `${receiver.url}/rotated`, events: ['dataset.created'] })
      .expect(201);
    const { body: rotated } = await t.http
      .post(`/v1/webhooks/${webhook.webhook_id}/rotate-secret`)
      .set(bearer(key))
      .expect(200);
    receiver.received.length = 0;
    await createDataset(t.http, key);
    await until(() => receiver.received.some((r) => r.path === '/rotated'), 10_000);
    const request = receiver.received.find((r) => r.path === '/rotated')!;
    const headers = request.headers as Record<string, string>;
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(webhook.secret).verify(request.raw, headers)).toEqual(request.body);
    expect(new Webhook(rotated.secret).verify(request.raw, headers)).toEqual(request.body);
    // The contract's single signature stays the previous secret's until the grace period ends.
    expect(headers['x-service-signature']).toBe(
      createHmac('sha256', webhook.secret).update(request.raw).digest('hex'),
    );
    await t.sql.query(`UPDATE webhooks SET previous_secret_expires_at = now() WHERE id = $1`, [
      webhook.webhook_id,
    ]);
    await createDataset(t.http, key);
    await until(() => receiver.received.filter((r) => r.path === '/rotated').length === 2, 10_000);
    const after = receiver.received.filter((r) => r.path === '/rotated')[1];
    expect((after.headers['webhook-signature'] as string).split(' ')).toHaveLength(1);
    expect(after.headers['x-service-signature']).toBe(
      createHmac('sha256', rotated.secret).update(after.raw).digest('hex'),
    );
  });
});

describe('Webhook limits', () => {
  let t: TestApp;
  let key: CreatedKey;
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start();
    t = await startTestApp({
      WEBHOOK_DISPATCH_INTERVAL_MS: '50',
      WEBHOOK_SWEEP_SECONDS: '1',
      WEBHOOK_HOURLY_LIMIT: '3',
      WEBHOOK_DISABLE_AFTER_DELIVERIES: '3',
    });
    key = await t.createApiKey();
  });
  afterAll(async () => {
    await t.close();
    await receiver.stop();
  });

  const statuses = async (webhookId: string) =>
    (
      await t.sql.query<{ status: string }>(
        'SELECT status FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY seq',
        [webhookId],
      )
    ).rows.map((r) => r.status);

  it('holds deliveries past the hourly limit until the next hour, dropping none', async () => {
    // The limit is per clock hour: a test that ran across the top of one would see it reset.
    const toNextHour = 3_600_000 - (Date.now() % 3_600_000);
    if (toNextHour < 30_000) await new Promise((resolve) => setTimeout(resolve, toNextHour + 1_000));
    const { body: webhook } = await t.http
      .post('/v1/webhooks')
      .set(bearer(key))
      .send({ url: `${receiver.url}/capped`, events: ['dataset.created'] })
      .expect(201);
    for (let i = 0; i < 5; i++) await createDataset(t.http, key);
    await until(
      async () => (await statuses(webhook.webhook_id)).filter((s) => s === 'delivered').length === 3,
      10_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // a sweep or two
    // Five datasets' events: no order among them, so which three went first is not known.
    expect((await statuses(webhook.webhook_id)).sort()).toEqual([
      'delivered',
      'delivered',
      'delivered',
      'pending',
      'pending',
    ]);
    const { rows } = await t.sql.query<{ held: boolean }>(
      `SELECT bool_and(next_attempt_at = date_trunc('hour', now()) + interval '1 hour') AS held
         FROM webhook_deliveries WHERE webhook_id = $1 AND status = 'pending'`,
      [webhook.webhook_id],
    );
    expect(rows[0].held).toBe(true);
    expect(receiver.of('dataset.created')).toHaveLength(3);
  }, 60_000);

  it('disables a webhook that fails more than 80% of its deliveries, which then receives nothing', async () => {
    const { body: webhook } = await t.http
      .post('/v1/webhooks')
      .set(bearer(key))
      .send({ url: `${receiver.url}/failing`, events: ['dataset.updated'] })
      .expect(201);
    receiver.answer = (request) => (request.path === '/failing' ? { status: 410 } : { status: 200 });
    const datasetId = await createDataset(t.http, key);
    for (let i = 0; i < 3; i++) {
      await t.http
        .patch(`/v1/datasets/${datasetId}`)
        .set(bearer(key))
        .send({ description: `v${i}` })
        .expect(200);
    }
    await until(
      async () => (await statuses(webhook.webhook_id)).filter((s) => s === 'failed').length === 3,
      10_000,
    );
    const got = await t.http.get(`/v1/webhooks/${webhook.webhook_id}`).set(bearer(key)).expect(200);
    expect(got.body).toMatchObject({
      active: false,
      disabled_reason: '3 of its 3 deliveries in the last 24 hours failed',
    });
    await t.http
      .patch(`/v1/datasets/${datasetId}`)
      .set(bearer(key))
      .send({ description: 'later' })
      .expect(200);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await statuses(webhook.webhook_id)).toHaveLength(3);
  });
});

describe('Webhook delivery in production', () => {
  let t: TestApp;
  let key: CreatedKey;

  beforeAll(async () => {
    t = await startTestApp({
      NODE_ENV: 'production',
      FORCE_HTTPS: 'false',
      PUBLIC_BASE_URL: 'http://localhost:3000',
      WEBHOOK_DISPATCH_INTERVAL_MS: '50',
      WEBHOOK_RETRY_DELAYS_SECONDS: '0',
    });
    key = await t.createApiKey();
  });
  afterAll(() => t.close());

  it('refuses a host name that resolves to a loopback address, at delivery time', async () => {
    const { body: webhook } = await t.http
      .post('/v1/webhooks')
      .set(bearer(key))
      .send({ url: 'https://localhost:9/hooks', events: ['dataset.created'] })
      .expect(201);
    const tested = await t.http
      .post('/v1/webhooks/test')
      .set(bearer(key))
      .send({ webhook_id: webhook.webhook_id, event: 'dataset.created' })
      .expect(200);
    expect(tested.body).toMatchObject({ delivered: false, status_code: null });
    expect(tested.body.error).toMatch(
      /^refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address/,
    );

    await createDataset(t.http, key);
    const path = `/v1/webhooks/${webhook.webhook_id}/deliveries`;
    await until(
      async () => (await t.http.get(path).set(bearer(key))).body.deliveries[0]?.status === 'failed',
      10_000,
    );
    const log = await t.http.get(path).set(bearer(key)).expect(200);
    expect(log.body.deliveries[0].attempts).toHaveLength(2); // the first, and one retry
    expect(log.body.deliveries[0].attempts[0].error).toMatch(/^refused: localhost resolves to/);
  });
});

describe('Webhook delivery across a crash', () => {
  let t: TestApp;
  let key: CreatedKey;
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start();
    // An API process only: it writes events and delivers none.
    t = await startTestApp({ ROLE: 'api' });
    key = await t.createApiKey();
  });
  afterAll(async () => {
    await t.close();
    await receiver.stop();
  });

  it('delivers, exactly once, an event whose process was killed between the commit and the delivery', async () => {
    await t.http
      .post('/v1/webhooks')
      .set(bearer(key))
      .send({ url: `${receiver.url}/crash`, events: ['dataset.created'] })
      .expect(201);
    // A whole service that would deliver only later: it is killed first.
    const port = await freePort();
    const doomed = await startProcess(
      t,
      { ROLE: 'all', PORT: String(port), WEBHOOK_DISPATCH_INTERVAL_MS: '60000' },
      '"listening"',
    );
    const created = await request(`http://127.0.0.1:${port}`)
      .post('/v1/datasets')
      .set(bearer(key))
      .send({ name: 'Survives' })
      .expect(201);
    await doomed.stop('SIGKILL');
    const { rows } = await t.sql.query('SELECT dispatched_at FROM events WHERE event = $1', [
      'dataset.created',
    ]);
    expect(rows).toEqual([{ dispatched_at: null }]);

    const worker = await startProcess(
      t,
      { ROLE: 'worker', WEBHOOK_DISPATCH_INTERVAL_MS: '50' },
      'ingestion worker started',
    );
    try {
      const [delivered] = await arrived(receiver, 'dataset.created');
      expect(delivered.body.data.dataset_id).toBe(created.body.id);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(receiver.of('dataset.created')).toHaveLength(1);
    } finally {
      await worker.stop();
    }
  });
});
