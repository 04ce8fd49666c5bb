import { registerClient, tokensFor } from './utils/oauth.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { createUser } from './utils/users.js';

interface Webhook {
  webhook_id: string;
  url: string;
  events: string[];
  description: string | null;
  active: boolean;
  disabled_reason: string | null;
  secret?: string;
  previous_secret_expires_at?: string;
}

const RECEIVER = 'http://127.0.0.1:9/hooks';

describe('Webhook subscriptions', () => {
  let t: TestApp;
  let key: CreatedKey;

  beforeAll(async () => {
    t = await startTestApp({ SIGN_IN_MAX_ATTEMPTS: '1000', OAUTH_REGISTRATIONS_PER_HOUR: '1000' });
    key = await t.createApiKey('acme');
  });
  afterAll(() => t.close());

  const create = (body: object, credential: CreatedKey | string = key) =>
    t.http.post('/v1/webhooks').set(bearer(credential)).send(body);

  it('creates a webhook and shows its secret once', async () => {
    const created = await create({
      url: RECEIVER,
      events: ['document.processed', 'dataset.created', 'document.processed'],
      description: 'CI',
    }).expect(201);
    const webhook = created.body as Webhook;
    expect(webhook).toMatchObject({
      webhook_id: expect.stringMatching(/^wh_[0-9A-Za-z]{22}$/),
      url: RECEIVER,
      events: ['document.processed', 'dataset.created'],
      description: 'CI',
      active: true,
      disabled_reason: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
    });
    const got = await t.http.get(`/v1/webhooks/${webhook.webhook_id}`).set(bearer(key)).expect(200);
    expect(got.body.secret).toBeUndefined();
    const listed = await t.http.get('/v1/webhooks').set(bearer(key)).expect(200);
    expect(listed.body).toMatchObject({ total: 1, limit: 20, offset: 0, has_more: false });
    expect(listed.body.webhooks[0].secret).toBeUndefined();
    await t.http.delete(`/v1/webhooks/${webhook.webhook_id}`).set(bearer(key)).expect(204);
    await t.http.get(`/v1/webhooks/${webhook.webhook_id}`).set(bearer(key)).expect(404);
  });

  const CREATED = ['dataset.created'];
  it.each([
    [
      'unknown events',
      { url: RECEIVER, events: ['document.created', 'dataset.created', 'nope'] },
      'invalid_events',
      { unknown: ['document.created', 'nope'] },
    ],
    ['no events', { url: RECEIVER, events: [] }, 'invalid_events', { unknown: [] }],
    [
      'plain HTTP to another host',
      { url: 'http://hooks.example.com/in', events: CREATED },
      'invalid_webhook_url',
      { field: 'url' },
    ],
    [
      'credentials in the URL',
      { url: 'https://u:p@hooks.example.com/', events: CREATED },
      'invalid_webhook_url',
      { field: 'url' },
    ],
    [
      'a URL over 2,048 characters',
      { url: `https://hooks.example.com/${'x'.repeat(2048)}`, events: CREATED },
      'invalid_webhook_url',
      { field: 'url' },
    ],
    [
      'a description over 1,000 characters',
      { url: RECEIVER, events: CREATED, description: 'd'.repeat(1001) },
      'validation_error',
      { field: 'description' },
    ],
    [
      'events that are not a list',
      { url: RECEIVER, events: 'dataset.created' },
      'validation_error',
      { field: 'events' },
    ],
    [
      'a secret of its own',
      { url: RECEIVER, events: CREATED, secret: 'mine' },
      'validation_error',
      { field: 'secret' },
    ],
  ])('refuses %s', async (_, body, code, details) => {
    const response = await create(body).expect(400);
    expect(response.body).toMatchObject({ code, details });
  });

  it('updates only what is sent, and re-enables a webhook the service disabled', async () => {
    const { body: webhook } = (await create({ url: RECEIVER, events: ['dataset.created'] }).expect(201)) as {
      body: Webhook;
    };
    await t.sql.query(`UPDATE webhooks SET active = false, disabled_reason = 'failing' WHERE id = $1`, [
      webhook.webhook_id,
    ]);
    const patched = await t.http
      .patch(`/v1/webhooks/${webhook.webhook_id}`)
      .set(bearer(key))
      .send({ events: ['dataset.deleted'], description: 'renamed' })
      .expect(200);
    expect(patched.body).toMatchObject({
      events: ['dataset.deleted'],
      description: 'renamed',
      active: false,
    });
    expect(patched.body.disabled_reason).toBe('failing');
    const enabled = await t.http
      .patch(`/v1/webhooks/${webhook.webhook_id}`)
      .set(bearer(key))
      .send({ active: true })
      .expect(200);
    expect(enabled.body).toMatchObject({ active: true, disabled_reason: null, url: RECEIVER });
    const refused = await t.http
      .patch(`/v1/webhooks/${webhook.webhook_id}`)
      .set(bearer(key))
      .send({ events: ['document.exploded'] })
      .expect(400);
    expect(refused.body.code).toBe('invalid_events');
  });

  it('rotates the secret, keeping the previous one for the grace period', async () => {
    const { body: webhook } = (await create({ url: RECEIVER, events: ['dataset.created'] }).expect(201)) as {
      body: Webhook;
    };
    const rotated = await t.http
      .post(`/v1/webhooks/${webhook.webhook_id}/rotate-secret`)
      .set(bearer(key))
      .expect(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(webhook.secret);
    const expires = Date.parse(rotated.body.previous_secret_expires_at as string);
    expect(Math.abs(expires - Date.now() - 24 * 3_600_000)).toBeLessThan(60_000);
    const { rows } = await t.sql.query<{ previous_secret: string }>(
      'SELECT previous_secret FROM webhooks WHERE id = $1',
      [webhook.webhook_id],
    );
    expect(rows[0].previous_secret).toBe(webhook.secret);
  });

  it('replays a creation with the same Idempotency-Key, secret included', async () => {
    const send = () =>
      t.http
        .post('/v1/webhooks')
        .set({ ...bearer(key), 'Idempotency-Key': 'webhook-once' })
        .send({ url: RECEIVER, events: ['dataset.updated'] });
    const first = await send().expect(201);
    const again = await send().expect(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
  });

  it('cuts a rotated secret off at once with grace_hours 0', async () => {
    const { body: webhook } = (await create({ url: RECEIVER, events: ['dataset.created'] }).expect(201)) as {
      body: Webhook;
    };
    await t.http.post(`/v1/webhooks/${webhook.webhook_id}/rotate-secret`).set(bearer(key)).expect(200);
    const rotated = await t.http
      .post(`/v1/webhooks/${webhook.webhook_id}/rotate-secret`)
      .set(bearer(key))
      .send({ grace_hours: 0 })
      .expect(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.previous_secret_expires_at).toBeUndefined();
    // Neither the secret it replaced nor the one before, still in its grace period, signs any more.
    const { rows } = await t.sql.query(
      'SELECT previous_secret, previous_secret_expires_at FROM webhooks WHERE id = $1',
      [webhook.webhook_id],
    );
    expect(rows[0]).toEqual({ previous_secret: null, previous_secret_expires_at: null });
    for (const grace of [-1, 721, 1.5, '2']) {
      const refused = await t.http
        .post(`/v1/webhooks/${webhook.webhook_id}/rotate-secret`)
        .set(bearer(key))
        .send({ grace_hours: grace })
        .expect(400);
      expect(refused.body).toMatchObject({ code: 'validation_error', details: { field: 'grace_hours' } });
    }
  });

  it('never replays a secret that is no longer current: after a rotation or a delete', async () => {
    const send = (key_: string) =>
      t.http
        .post('/v1/webhooks')
        .set({ ...bearer(key), 'Idempotency-Key': key_ })
        .send({ url: RECEIVER, events: ['dataset.deleted'] });
    const rotatedAway = (await send('rotated-later').expect(201)).body as Webhook;
    await t.http.post(`/v1/webhooks/${rotatedAway.webhook_id}/rotate-secret`).set(bearer(key)).expect(200);
    const afterRotation = await send('rotated-later').expect(201);
    expect(afterRotation.headers['idempotent-replayed']).toBe('true');
    expect(afterRotation.body.webhook_id).toBe(rotatedAway.webhook_id);
    expect(afterRotation.body.secret).toBeUndefined();

    const deletedLater = (await send('deleted-later').expect(201)).body as Webhook;
    await t.http.delete(`/v1/webhooks/${deletedLater.webhook_id}`).set(bearer(key)).expect(204);
    const afterDelete = await send('deleted-later').expect(201);
    expect(afterDelete.body.webhook_id).toBe(deletedLater.webhook_id);
    expect(afterDelete.body.secret).toBeUndefined();
  });

  it.each([
    ['url', { url: 'https://hooks.example.com/\u0000' }],
    ['description', { description: 'a\u0000b' }],
    ['description', { description: 'a\ud800b' }],
  ])(
    'answers 400 validation_error for %s holding text PostgreSQL cannot store, on create and update',
    async (field, change) => {
      const created = await create({ url: RECEIVER, events: ['dataset.created'], ...change }).expect(400);
      expect(created.body).toMatchObject({ code: 'validation_error', details: { field } });
      const { body: webhook } = (await create({ url: RECEIVER, events: ['dataset.created'] }).expect(
        201,
      )) as {
        body: Webhook;
      };
      const patched = await t.http
        .patch(`/v1/webhooks/${webhook.webhook_id}`)
        .set(bearer(key))
        .send(change)
        .expect(400);
      expect(patched.body).toMatchObject({ code: 'validation_error', details: { field } });
    },
  );

  it('keeps each account to its own webhooks, and to 100 of them', async () => {
    const other = await t.createApiKey('globex');
    const { body: webhook } = (await create({ url: RECEIVER, events: ['dataset.created'] }).expect(201)) as {
      body: Webhook;
    };
    for (const request of [
      t.http.get(`/v1/webhooks/${webhook.webhook_id}`),
      t.http.patch(`/v1/webhooks/${webhook.webhook_id}`).send({ active: false }),
      t.http.delete(`/v1/webhooks/${webhook.webhook_id}`),
      t.http.post(`/v1/webhooks/${webhook.webhook_id}/rotate-secret`),
    ]) {
      const response = await request.set(bearer(other)).expect(404);
      expect(response.body.code).toBe('webhook_not_found');
    }
    await t.sql.query(
      `INSERT INTO webhooks (id, account_id, url, events, secret)
       SELECT 'wh_' || lpad(i::text, 22, '0'), $1, $2, '{dataset.created}', 'whsec_x' FROM generate_series(1, 100) i`,
      [other.account_id, RECEIVER],
    );
    const refused = await create({ url: RECEIVER, events: ['dataset.created'] }, other).expect(422);
    expect(refused.body).toMatchObject({ code: 'webhook_limit_reached', details: { limit: 100 } });
  });

  it('needs the webhooks scopes: admins and API keys hold them, members do not', async () => {
    const client = await registerClient(t);
    const member = await createUser(t, { account: 'acme', role: 'member' });
    const admin = await createUser(t, { account: 'acme', role: 'admin' });
    const memberToken = await tokensFor(t, client, member);
    expect(memberToken.scope).not.toContain('webhooks');
    const refused = await t.http.get('/v1/webhooks').set(bearer(memberToken.access_token)).expect(403);
    expect(refused.body).toMatchObject({
      code: 'insufficient_scope',
      details: { required_scope: 'webhooks:read' },
    });
    // Asked for by name: a client that names no scope is not granted the webhooks'.
    expect((await tokensFor(t, client, admin)).scope).not.toContain('webhooks');
    const adminToken = await tokensFor(t, client, admin, { scope: 'webhooks:read webhooks:write' });
    expect(adminToken.scope.split(' ').sort()).toEqual(['webhooks:read', 'webhooks:write']);
    await create({ url: RECEIVER, events: ['dataset.created'] }, adminToken.access_token).expect(201);
    // A grant for chosen datasets would see every dataset's events through a webhook.
    const datasetId = (
      await t.http.post('/v1/datasets').set(bearer(key)).send({ name: 'only this' }).expect(201)
    ).body.id as string;
    const narrow = await tokensFor(t, client, admin, {
      scope: 'webhooks:read webhooks:write',
      datasetIds: [datasetId],
    });
    const restricted = await t.http.get('/v1/webhooks').set(bearer(narrow.access_token)).expect(403);
    expect(restricted.body.code).toBe('grant_restricted');
  });
});
