import { addDocument, createDataset, type DocumentBody, waitForDocument } from './utils/documents.js';
import { Receiver } from './utils/receiver.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { until } from './utils/until.js';
import { createUser, SAME_ORIGIN, signIn } from './utils/users.js';

const ACCOUNT = 'document-metadata';

describe('PATCH of a document: its metadata, changed without reprocessing', () => {
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;
  const receiver = new Receiver();

  beforeAll(async () => {
    await receiver.start();
    t = await startTestApp({ WEBHOOK_DISPATCH_INTERVAL_MS: '50' });
    key = await t.createApiKey(ACCOUNT);
    datasetId = await createDataset(t.http, key);
  });
  afterAll(async () => {
    await t?.close();
    await receiver.stop();
  });

  const documentPath = (documentId: string, dataset = datasetId) =>
    `/v1/datasets/${dataset}/documents/${documentId}`;
  const patch = (documentId: string, body: unknown, dataset = datasetId) =>
    t.http
      .patch(documentPath(documentId, dataset))
      .set(bearer(key))
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(body));
  const get = async (documentId: string) =>
    (await t.http.get(documentPath(documentId)).set(bearer(key)).expect(200)).body as DocumentBody;
  const search = async (query: string, filters?: object) => {
    const response = await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, query, ...(filters ? { filters } : {}) })
      .expect(200);
    return (response.body.results as { document_id: string }[]).map((result) => result.document_id);
  };
  const chunkIds = async (documentId: string) =>
    (
      await t.sql.query<{ id: string }>('SELECT id FROM chunks WHERE document_id = $1 ORDER BY ordinal', [
        documentId,
      ])
    ).rows.map((row) => row.id);
  const eventsOf = async (documentId: string) =>
    (
      await t.sql.query<{ event: string; data: Record<string, unknown> }>(
        'SELECT event, data FROM events WHERE resource_id = $1 ORDER BY seq',
        [documentId],
      )
    ).rows;

  it('merges the metadata, removes keys sent as null, and answers the document as GET does', async () => {
    const document = await addDocument(t.http, key, datasetId, {
      content: 'The lighthouse keeper logs the weather every hour.',
      metadata: { category: 'logs', team: 'coast', tags: ['weather'], nested: { a: 1, b: 2 } },
    });
    const response = await patch(document.document_id, {
      metadata: { team: null, tags: ['weather', 'hourly'], nested: { a: 3 }, owner: 'ana' },
    }).expect(200);
    expect(response.body.metadata).toEqual({
      category: 'logs',
      tags: ['weather', 'hourly'],
      nested: { a: 3 },
      owner: 'ana',
    });
    expect(response.body).toEqual(await get(document.document_id));
  });

  it('keeps the status, chunks and processing facts: nothing is reprocessed', async () => {
    const document = await addDocument(t.http, key, datasetId, {
      content: 'Tide tables are printed each spring. The harbour master keeps a copy.',
      metadata: { category: 'tides' },
    });
    const chunksBefore = await chunkIds(document.document_id);
    expect(chunksBefore.length).toBeGreaterThan(0);
    const response = await patch(document.document_id, { metadata: { category: 'almanac' } }).expect(200);
    expect(response.body).toEqual({ ...document, metadata: { category: 'almanac' } });
    expect(response.body).toMatchObject({
      status: 'ready',
      chunks_created: document.chunks_created,
      processed_at: document.processed_at,
      processing_time_ms: document.processing_time_ms,
    });
    expect(response.body).not.toHaveProperty('progress');
    const { rows } = await t.sql.query<{ generation: number }>(
      'SELECT generation FROM documents WHERE id = $1',
      [document.document_id],
    );
    expect(rows[0].generation).toBe(1);
    expect(await chunkIds(document.document_id)).toEqual(chunksBefore);
    expect((await eventsOf(document.document_id)).map((e) => e.event)).toEqual([
      'document.uploaded',
      'document.processed',
      'document.updated',
    ]);
  });

  it('is seen by the next search’s filters, and the indexed title stays until reprocessing', async () => {
    const document = await addDocument(t.http, key, datasetId, {
      content: 'Seagulls nest on the northern cliffs in early summer.',
      metadata: { title: 'Gannet survey', region: 'south' },
    });
    expect(await search('seagulls', { region: 'south' })).toEqual([document.document_id]);
    await patch(document.document_id, {
      metadata: { region: 'north', title: 'Puffin survey', nested: { level: 2 } },
    }).expect(200);
    expect(await search('seagulls', { region: 'north' })).toEqual([document.document_id]);
    expect(await search('seagulls', { region: 'south' })).toEqual([]);
    expect(await search('seagulls', { 'nested.level': { $gte: 2 } })).toEqual([document.document_id]);
    // The chunks keep the title they were indexed with; reprocessing indexes the new one.
    expect(await search('gannet')).toEqual([document.document_id]);
    expect(await search('puffin')).toEqual([]);
    await t.http
      .post(`${documentPath(document.document_id)}/reprocess`)
      .set(bearer(key))
      .expect(200);
    await waitForDocument(t.http, key, datasetId, document.document_id);
    expect(await search('puffin')).toEqual([document.document_id]);
    expect(await search('gannet')).toEqual([]);
  });

  it('changes a document still processing at once, and the run’s end keeps the new metadata', async () => {
    // The dataset's chunk lock, held here, keeps the run waiting at the start of its indexing.
    const lock = await t.sql.connect();
    let documentId: string;
    try {
      await lock.query('BEGIN');
      await lock.query(`SELECT pg_advisory_xact_lock(hashtextextended('dataset chunks ' || $1::text, 0))`, [
        datasetId,
      ]);
      const uploaded = await t.http
        .post(`/v1/datasets/${datasetId}/documents`)
        .set(bearer(key))
        .send({ content: 'The ferry timetable changes in October.', metadata: { season: 'summer' } })
        .expect(201);
      documentId = uploaded.body.document_id as string;
      await until(async () => (await get(documentId)).progress?.stage === 'indexing', 10_000);
      // Answered while the run waits: a change that waited for the chunk lock would time out here.
      const response = await patch(documentId, { metadata: { season: 'autumn' } })
        .timeout(2_000)
        .expect(200);
      expect(response.body).toMatchObject({ status: 'processing', metadata: { season: 'autumn' } });
      expect(response.body.progress).toEqual({ stage: 'indexing', percent: expect.any(Number) });
    } finally {
      await lock.query('ROLLBACK');
      lock.release();
    }
    const done = await waitForDocument(t.http, key, datasetId, documentId);
    expect(done).toMatchObject({ status: 'ready', metadata: { season: 'autumn' } });
    expect(await search('ferry timetable', { season: 'autumn' })).toEqual([documentId]);
    expect((await eventsOf(documentId)).map((e) => e.event)).toEqual([
      'document.uploaded',
      'document.updated',
      'document.processed',
    ]);
  });

  it('sends document.updated to a subscribed webhook, with the merged metadata', async () => {
    await t.http
      .post('/v1/webhooks')
      .set(bearer(key))
      .send({ url: `${receiver.url}/hooks`, events: ['document.updated'] })
      .expect(201);
    const document = await addDocument(t.http, key, datasetId, {
      content: 'Buoys are repainted every third year.',
      metadata: { category: 'maintenance', draft: true },
    });
    await patch(document.document_id, { metadata: { draft: null, reviewed: true } }).expect(200);
    await until(() => receiver.of('document.updated').length > 0, 10_000);
    const [delivery] = receiver.of('document.updated');
    expect(delivery.headers['x-service-event']).toBe('document.updated');
    expect(delivery.body).toMatchObject({ id: expect.stringMatching(/^evt_/), event: 'document.updated' });
    expect(delivery.body.data).toEqual({
      document_id: document.document_id,
      dataset_id: datasetId,
      changes: { metadata: { category: 'maintenance', reviewed: true } },
      updated_by: key.key_id,
    });
    // Only the event subscribed to is sent (document.uploaded and .processed are not).
    expect(receiver.received.map((r) => r.body.event)).toEqual(['document.updated']);
  });

  it('records no event for a PATCH that changes nothing, and answers the document unchanged', async () => {
    const document = await addDocument(t.http, key, datasetId, {
      content: 'The pier lamps are lit at dusk.',
      metadata: { category: 'lamps' },
    });
    expect((await patch(document.document_id, {}).expect(200)).body).toEqual(document);
    expect((await patch(document.document_id, { metadata: { category: 'lamps' } }).expect(200)).body).toEqual(
      document,
    );
    expect((await patch(document.document_id, { metadata: { absent: null } }).expect(200)).body).toEqual(
      document,
    );
    expect((await eventsOf(document.document_id)).map((e) => e.event)).toEqual([
      'document.uploaded',
      'document.processed',
    ]);
  });

  describe('refusals', () => {
    let documentId: string;
    const original = {
      category: 'charts',
      ...Object.fromEntries([...Array(60).keys()].map((i) => [`k${i}`, i])),
    };

    beforeAll(async () => {
      documentId = (
        await addDocument(t.http, key, datasetId, { content: 'Charts of the bay.', metadata: original })
      ).document_id;
    });
    afterEach(async () => {
      // Nothing refused changed the document or recorded an event.
      expect((await get(documentId)).metadata).toEqual(original);
      expect((await eventsOf(documentId)).map((e) => e.event)).toEqual([
        'document.uploaded',
        'document.processed',
      ]);
    });

    it.each([
      ['a body that is not an object', [], 'validation_error', 'body'],
      ['a number as body', 5, 'validation_error', 'body'],
      ['an unknown top-level field', { metadata: {}, status: 'ready' }, 'validation_error', 'status'],
      ['metadata that is not an object', { metadata: ['a'] }, 'invalid_metadata', 'metadata'],
      ['metadata null', { metadata: null }, 'invalid_metadata', 'metadata'],
      ['a nested null', { metadata: { a: { b: null } } }, 'invalid_metadata', 'metadata'],
      ['a key starting with $', { metadata: { $in: 1 } }, 'invalid_metadata', 'metadata'],
      ['metadata over 16 KB', { metadata: { big: 'x'.repeat(17_000) } }, 'invalid_metadata', 'metadata'],
      [
        'metadata nested too deep',
        { metadata: { a: { b: { c: { d: { e: { f: 1 } } } } } } },
        'invalid_metadata',
        'metadata',
      ],
    ])('answers 400 for %s', async (_, body, code, field) => {
      const response = await patch(documentId, body).expect(400);
      expect(response.body).toEqual({
        error: expect.any(String),
        code,
        details: expect.objectContaining({
          errors: expect.arrayContaining([expect.objectContaining({ field })]),
        }),
      });
    });

    it('answers 400 invalid_metadata for a merge over 64 keys, though the patch alone is within them', async () => {
      const extra = Object.fromEntries([...Array(10).keys()].map((i) => [`extra${i}`, i]));
      const response = await patch(documentId, { metadata: extra }).expect(400);
      expect(response.body).toEqual({
        error: expect.stringContaining('after merging, must have at most 64 keys'),
        code: 'invalid_metadata',
        details: {
          field: 'metadata',
          issue: 'after merging, must have at most 64 keys',
          errors: [{ field: 'metadata', issue: 'after merging, must have at most 64 keys' }],
        },
      });
    });

    it('answers 400 invalid_json for a body that does not parse', async () => {
      const response = await t.http
        .patch(documentPath(documentId))
        .set(bearer(key))
        .set('Content-Type', 'application/json')
        .send('{"metadata": ')
        .expect(400);
      expect(response.body.code).toBe('invalid_json');
    });

    it('answers 404 document_not_found for an unknown, malformed or other dataset’s document', async () => {
      const otherDataset = await createDataset(t.http, key);
      for (const [id, dataset] of [
        ['doc_0000000000000000000000', datasetId],
        ['not-an-id', datasetId],
        [documentId, otherDataset],
      ]) {
        const response = await patch(id, { metadata: { a: 1 } }, dataset).expect(404);
        expect(response.body).toEqual({
          error: expect.any(String),
          code: 'document_not_found',
          details: { document_id: id },
        });
      }
    });

    it('answers 404 for a missing dataset or another account’s private one, 403 for its public one', async () => {
      const stranger = await t.createApiKey();
      for (const [as, dataset] of [
        [key, 'ds_0000000000000000000000'],
        [stranger, datasetId],
      ] as const) {
        const response = await t.http
          .patch(documentPath(documentId, dataset))
          .set(bearer(as))
          .send({ metadata: { a: 1 } })
          .expect(404);
        expect(response.body).toEqual({
          error: expect.any(String),
          code: 'dataset_not_found',
          details: { dataset_id: dataset },
        });
      }
      // A public dataset is visible to anyone, and changing what it holds is its owner's alone.
      const shown = await createDataset(t.http, key, { is_public: true });
      const inShown = await addDocument(t.http, key, shown, { content: 'Open charts.' });
      const response = await t.http
        .patch(documentPath(inShown.document_id, shown))
        .set(bearer(stranger))
        .send({ metadata: { a: 1 } })
        .expect(403);
      expect(response.body.code).toBe('forbidden');
    });

    it('answers 401 without credentials and 403 to a viewer, who may read but not write', async () => {
      const anonymous = await t.http
        .patch(documentPath(documentId))
        .send({ metadata: { a: 1 } })
        .expect(401);
      expect(anonymous.body.code).toBe('authentication_required');
      const viewer = await signIn(t, await createUser(t, { account: ACCOUNT, role: 'viewer' }));
      await t.http.get(documentPath(documentId)).set('Cookie', viewer).expect(200);
      const response = await t.http
        .patch(documentPath(documentId))
        .set({ Cookie: viewer, ...SAME_ORIGIN })
        .send({ metadata: { a: 1 } })
        .expect(403);
      expect(response.body).toEqual({
        error: expect.any(String),
        code: 'insufficient_scope',
        details: { required_scope: 'documents:write' },
      });
    });
  });
});
