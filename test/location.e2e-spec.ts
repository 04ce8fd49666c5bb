import { randomUUID } from 'node:crypto';
import { createDataset } from './utils/documents.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { createUser } from './utils/users.js';

interface OpenApi {
  paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>>;
}

describe('Location on 201', () => {
  let t: TestApp;
  let key: CreatedKey;

  beforeAll(async () => {
    t = await startTestApp();
    key = await t.createApiKey('acme');
  });
  afterAll(() => t.close());

  /** Creates with an Idempotency-Key, then repeats it: both answers must point at the one resource. */
  async function createTwice(path: string, body: object) {
    const idempotencyKey = randomUUID();
    const send = () => t.http.post(path).set(bearer(key)).set('Idempotency-Key', idempotencyKey).send(body);
    const first = await send().expect(201);
    const replay = await send().expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(replay.headers.location).toBe(first.headers.location);
    expect(replay.body).toEqual(first.body);
    return first;
  }

  it('points at the new dataset, on the first answer and on its replay', async () => {
    const created = await createTwice('/v1/datasets', { name: 'Located' });
    expect(created.headers.location).toBe(`/v1/datasets/${created.body.id}`);
    const fetched = await t.http.get(created.headers.location).set(bearer(key)).expect(200);
    expect(fetched.body.id).toBe(created.body.id);
  });

  it('points at the new document, for text and for a file', async () => {
    const datasetId = await createDataset(t.http, key);
    const text = await createTwice(`/v1/datasets/${datasetId}/documents`, { content: 'Some text to index.' });
    expect(text.headers.location).toBe(`/v1/datasets/${datasetId}/documents/${text.body.document_id}`);
    const file = await t.http
      .post(`/v1/datasets/${datasetId}/documents`)
      .set(bearer(key))
      .attach('file', Buffer.from('A file to index.'), 'notes.txt')
      .expect(201);
    expect(file.headers.location).toBe(`/v1/datasets/${datasetId}/documents/${file.body.document_id}`);
    for (const location of [text.headers.location, file.headers.location]) {
      const fetched = await t.http.get(location).set(bearer(key)).expect(200);
      expect(location).toContain(fetched.body.document_id);
    }
  });

  it('points at the new webhook', async () => {
    const created = await createTwice('/v1/webhooks', {
      url: 'http://127.0.0.1:9/hooks',
      events: ['document.processed'],
    });
    expect(created.headers.location).toBe(`/v1/webhooks/${created.body.webhook_id}`);
    const fetched = await t.http.get(created.headers.location).set(bearer(key)).expect(200);
    expect(fetched.body.webhook_id).toBe(created.body.webhook_id);
  });

  it('points a sign-in at the session it started', async () => {
    const user = await createUser(t);
    const response = await t.http
      .post('/v1/auth/session')
      .send({ email: user.user.email, password: user.password })
      .expect(201);
    expect(response.headers.location).toBe('/v1/auth/session');
  });

  it('sends no Location with an answer that creates nothing addressable', async () => {
    const datasetId = await createDataset(t.http, key);
    const listed = await t.http.get(`/v1/datasets/${datasetId}/documents`).set(bearer(key)).expect(200);
    expect(listed.headers.location).toBeUndefined();
    const failed = await t.http.post('/v1/datasets').set(bearer(key)).send({ name: '' }).expect(400);
    expect(failed.headers.location).toBeUndefined();
  });

  it('declares the header on every 201 in the OpenAPI document', async () => {
    const document = (await t.http.get('/docs/openapi.json').expect(200)).body as OpenApi;
    const created = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, operation]) => operation.responses?.['201'])
        .map(([method, operation]) => [`${method} ${path}`, operation.responses['201'].headers]),
    );
    // OAuth's registration (RFC 7591) is not in the document, and makes no resource to GET.
    expect(created.map(([operation]) => operation).sort()).toEqual([
      'post /v1/auth/session',
      'post /v1/datasets',
      'post /v1/datasets/import',
      'post /v1/datasets/{dataset_id}/documents',
      'post /v1/datasets/{dataset_id}/documents/upload',
      'post /v1/webhooks',
    ]);
    for (const [operation, headers] of created) {
      expect([operation, headers]).toEqual([
        operation,
        expect.objectContaining({
          Location: expect.objectContaining({ schema: { type: 'string', format: 'uri-reference' } }),
        }),
      ]);
    }
  });
});
