import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

describe('Idempotency-Key on creating POSTs', () => {
  let t: TestApp;
  let key: CreatedKey;

  beforeAll(async () => {
    t = await startTestApp();
    key = await t.createApiKey();
  });
  afterAll(() => t.close());

  const create = (idempotencyKey: string, body: object, as: CreatedKey = key) =>
    t.http.post('/v1/datasets').set(bearer(as)).set('Idempotency-Key', idempotencyKey).send(body);

  const countNamed = async (name: string) => {
    const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM datasets WHERE name = $1', [name]);
    return rows[0].n as number;
  };

  it('replays the first response for a repeated key and body, creating nothing more', async () => {
    const first = await create('key-replay', { name: 'Once' }).expect(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const second = await create('key-replay', { name: 'Once' }).expect(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.text).toBe(first.text); // the same bytes: jsonb had stored the fields reordered
    expect(await countNamed('Once')).toBe(1);
  });

  it('treats the same JSON with another key order as the same request', async () => {
    const first = await create('key-order', { name: 'Ordered', metadata: { a: 1, b: 2 } }).expect(201);
    const second = await t.http
      .post('/v1/datasets')
      .set(bearer(key))
      .set('Idempotency-Key', 'key-order')
      .set('Content-Type', 'application/json')
      .send('{"metadata":{"b":2,"a":1},"name":"Ordered"}')
      .expect(201);
    expect(second.body.id).toBe(first.body.id);
  });

  it('replays a retry that spells the same route another way', async () => {
    const first = await create('key-spelling', { name: 'Spelled' }).expect(201);
    for (const path of ['/v1/datasets/', '/V1/Datasets']) {
      const again = await t.http
        .post(path)
        .set(bearer(key))
        .set('Idempotency-Key', 'key-spelling')
        .send({ name: 'Spelled' })
        .expect(201);
      expect([path, again.headers['idempotent-replayed'], again.body.id]).toEqual([
        path,
        'true',
        first.body.id,
      ]);
    }
    expect(await countNamed('Spelled')).toBe(1);
  });

  it('answers 422 idempotency_key_reused for the same key with a different body', async () => {
    await create('key-reused', { name: 'First body' }).expect(201);
    const response = await create('key-reused', { name: 'Second body' }).expect(422);
    expect(response.body.code).toBe('idempotency_key_reused');
    expect(await countNamed('Second body')).toBe(0);
  });

  it('creates one resource for concurrent requests with one key', async () => {
    const responses = await Promise.all(
      Array.from({ length: 6 }, () => create('key-race', { name: 'Raced' })),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(6).fill(201));
    expect(new Set(responses.map((r) => r.body.id)).size).toBe(1);
    expect(responses.filter((r) => r.headers['idempotent-replayed'] === 'true')).toHaveLength(5);
    expect(await countNamed('Raced')).toBe(1);
  });

  it('scopes keys per account', async () => {
    const other = await t.createApiKey();
    const mine = await create('key-shared', { name: 'Per account' }).expect(201);
    const theirs = await create('key-shared', { name: 'Per account' }, other).expect(201);
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
  });

  it('releases the key when the request fails, so that a corrected retry runs', async () => {
    await create('key-retry', { name: '' }).expect(400);
    const retried = await create('key-retry', { name: 'Corrected' }).expect(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
  });

  it('does not store a response for a request that conflicts', async () => {
    await t.http.post('/v1/datasets').set(bearer(key)).send({ name: 'Conflicting' }).expect(201);
    await create('key-conflict', { name: 'Conflicting' }).expect(409);
    const { rows } = await t.sql.query(
      "SELECT count(*)::int AS n FROM idempotency_keys WHERE key = 'key-conflict'",
    );
    expect(rows[0].n).toBe(0);
  });

  it('refuses an idempotency key that is too long or not printable ASCII', async () => {
    const response = await create('k'.repeat(256), { name: 'Long key' }).expect(400);
    expect(response.body.code).toBe('invalid_idempotency_key');
    expect(await countNamed('Long key')).toBe(0);
  });

  it('answers 400, not 500, for a deeply nested body sent with a key', async () => {
    const response = await t.http
      .post('/v1/datasets')
      .set(bearer(key))
      .set('Idempotency-Key', 'key-deep')
      .set('Content-Type', 'application/json')
      .send(`{"name":"Deep","metadata":{"a":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`)
      .expect(400);
    expect(response.body.details).toMatchObject({ field: 'body' });
  });

  it('answers 422 for a different body while the first request still holds the key', async () => {
    await create('key-pending', { name: 'Pending first' }).expect(201);
    await t.sql.query(
      "UPDATE idempotency_keys SET state = 'pending', response_body = NULL WHERE key = 'key-pending'",
    );
    const response = await create('key-pending', { name: 'Pending second' }).expect(422);
    expect(response.body.code).toBe('idempotency_key_reused');
  });

  it('takes over a claim abandoned by a request that died', async () => {
    const first = await create('key-abandoned', { name: 'Abandoned' }).expect(201);
    await t.http.delete(`/v1/datasets/${first.body.id}`).set(bearer(key)).expect(204);
    // As if the first request had died after claiming: pending, two minutes old.
    await t.sql.query(
      `UPDATE idempotency_keys SET state = 'pending', response_body = NULL, created_at = now() - interval '2 minutes'
        WHERE key = 'key-abandoned'`,
    );
    const retried = await create('key-abandoned', { name: 'Abandoned' }).expect(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect(retried.body.id).not.toBe(first.body.id);
  });

  it('runs again once the stored response has expired', async () => {
    const first = await create('key-expired', { name: 'Expiring' }).expect(201);
    await t.sql.query(
      "UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE key = 'key-expired'",
    );
    await t.http.delete(`/v1/datasets/${first.body.id}`).set(bearer(key)).expect(204);
    const again = await create('key-expired', { name: 'Expiring' }).expect(201);
    expect(again.body.id).not.toBe(first.body.id);
  });
});
