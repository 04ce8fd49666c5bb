import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

describe('Datasets API', () => {
  let t: TestApp;
  let key: CreatedKey;
  let other: CreatedKey;

  beforeAll(async () => {
    t = await startTestApp();
    [key, other] = await Promise.all([t.createApiKey(), t.createApiKey()]);
  });
  afterAll(() => t.close());

  const create = (body: object, as: CreatedKey = key) =>
    t.http.post('/v1/datasets').set(bearer(as)).send(body);
  /** A body as written: keys such as `__proto__`, and numbers, that an object would not carry as sent. */
  const createFromJson = (json: string) =>
    t.http.post('/v1/datasets').set(bearer(key)).set('Content-Type', 'application/json').send(json);

  describe('POST /v1/datasets', () => {
    it('creates a dataset with every contract field, a trimmed name and a ds_ id', async () => {
      const response = await create({
        name: '  Manuals  ',
        description: 'All manuals',
        metadata: { team: 'docs' },
      }).expect(201);
      expect(response.body).toEqual({
        id: expect.stringMatching(/^ds_[0-9A-Za-z]{22}$/),
        name: 'Manuals',
        description: 'All manuals',
        is_public: false,
        document_count: 0,
        language: 'english',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updated_at: response.body.created_at,
        metadata: { team: 'docs' },
      });
    });

    it('defaults is_public to false and metadata to an empty object', async () => {
      const response = await create({ name: 'Defaults' }).expect(201);
      expect(response.body).toMatchObject({ is_public: false, metadata: {}, description: null });
    });

    it.each([
      ['empty', '', 'must be 1-200 characters after trimming'],
      ['only spaces', '   ', 'must be 1-200 characters after trimming'],
      ['201 characters', 'x'.repeat(201), 'must be 1-200 characters after trimming'],
      // class-validator's Length does not count variation selectors: this passed as 200 characters.
      [
        '400 code points, half of them variation selectors',
        'a\ufe0f'.repeat(200),
        'must be 1-200 characters after trimming',
      ],
      ['not a string', 42, 'must be a string'],
      ['holding U+0000', 'a\u0000b', 'must not contain the character U+0000'],
      ['holding an unpaired surrogate', 'a\ud800b', 'must not contain unpaired UTF-16 surrogates'],
      // Each of these was 201: a name that shows as nothing, or one that rings or recolours a terminal.
      ['a zero-width space alone', '\u200b', 'must contain visible text'],
      ['a soft hyphen alone', '\u00ad', 'must contain visible text'],
      ['a Hangul filler alone', ' \u3164 ', 'must contain visible text'],
      ['a bell', '\u0007', 'must not contain control characters'],
      ['a terminal escape sequence', '\u001b[31mred', 'must not contain control characters'],
      ['a line break inside', 'two\nlines', 'must not contain control characters'],
      ['a C1 control inside', 'next\u0085line', 'must not contain control characters'],
    ])('answers 400 invalid_name for a name that is %s', async (_case, name, issue) => {
      const response = await create({ name }).expect(400);
      expect(response.body).toMatchObject({ code: 'invalid_name', details: { field: 'name', issue } });
      expect(typeof response.body.error).toBe('string');
    });

    it('answers 400 invalid_name when the name is missing', async () => {
      const response = await create({ description: 'no name' }).expect(400);
      expect(response.body).toMatchObject({
        code: 'invalid_name',
        details: { field: 'name', issue: 'is required' },
      });
    });

    it('counts characters, not UTF-16 units: 200 emoji make a valid name', async () => {
      const response = await create({ name: '🔎'.repeat(200) }).expect(201);
      expect([...response.body.name]).toHaveLength(200);
    });

    it('counts a name in code points on update too: 200 with selectors pass, 202 do not', async () => {
      const created = await create({ name: 'a\ufe0f'.repeat(100) }).expect(201);
      const path = `/v1/datasets/${created.body.id}`;
      const response = await t.http
        .patch(path)
        .set(bearer(key))
        .send({ name: 'b\ufe0f'.repeat(101) })
        .expect(400);
      expect(response.body).toMatchObject({ code: 'invalid_name', details: { field: 'name' } });
      await t.http
        .patch(path)
        .set(bearer(key))
        .send({ name: 'b\ufe0f'.repeat(100) })
        .expect(200);
    });

    it('counts a description in code points, variation selectors too', async () => {
      await create({ name: 'Selectors', description: '\u2764\ufe0f'.repeat(500) }).expect(201);
      const response = await create({
        name: 'Too many selectors',
        description: 'a\ufe0f'.repeat(501),
      }).expect(400);
      expect(response.body).toMatchObject({
        code: 'validation_error',
        details: { field: 'description', issue: 'must be at most 1000 characters' },
      });
    });

    it('answers 400 validation_error naming each bad field', async () => {
      const response = await create({ name: 'Fine', description: 'd'.repeat(1001), is_public: 'yes' }).expect(
        400,
      );
      expect(response.body.code).toBe('validation_error');
      expect(response.body.details.errors).toEqual(
        expect.arrayContaining([
          { field: 'description', issue: 'must be at most 1000 characters' },
          { field: 'is_public', issue: 'must be a boolean' },
        ]),
      );
    });

    it('answers 400 validation_error for a description holding U+0000, on create and on update', async () => {
      const response = await create({ name: 'Nul description', description: 'a\u0000b' }).expect(400);
      expect(response.body).toMatchObject({ code: 'validation_error', details: { field: 'description' } });
      const created = await create({ name: 'Nul description' }).expect(201);
      const patched = await t.http
        .patch(`/v1/datasets/${created.body.id}`)
        .set(bearer(key))
        .send({ description: 'a\u0000b' })
        .expect(400);
      expect(patched.body).toMatchObject({ code: 'validation_error', details: { field: 'description' } });
    });

    it('refuses query parameters on routes that take none, rather than ignore them', async () => {
      const created = await create({ name: 'Query parameters' }).expect(201);
      const path = `/v1/datasets/${created.body.id}`;
      const read = await t.http.get(`${path}?foo=bar`).set(bearer(key)).expect(400);
      expect(read.body).toMatchObject({ code: 'validation_error', details: { field: 'foo' } });
      const remove = await t.http.delete(`${path}?force=true`).set(bearer(key)).expect(400);
      expect(remove.body).toMatchObject({ code: 'validation_error', details: { field: 'force' } });
      await t.http.get(path).set(bearer(key)).expect(200);
      await t.http.get('/v1/datasets?limit=1').set(bearer(key)).expect(200);
      await t.http.get('/health?_=1712345678').expect(200);
    });

    it('refuses unknown body fields with 400 validation_error', async () => {
      const response = await create({ name: 'Unknown field', colour: 'blue' }).expect(400);
      expect(response.body).toMatchObject({
        code: 'validation_error',
        details: { field: 'colour', issue: 'is not a known field' },
      });
    });

    it('lists the first 20 issues and counts the rest', async () => {
      const unknown = Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`extra${i}`, i]));
      const response = await create({ name: 'Many unknown fields', ...unknown }).expect(400);
      expect(response.body.details).toMatchObject({ field: 'extra0', omitted: 980 });
      expect(response.body.details.errors).toHaveLength(20);
      expect(response.body.error).toMatch(/; and 980 more$/);
      // The error's size no longer grows with the number of issues.
      expect(JSON.stringify(response.body).length).toBeLessThan(2_000);
    });

    it('lists the issue that decides the code first, within the 20', async () => {
      const unknown = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`extra${i}`, i]));
      const response = await create({ ...unknown, name: '' }).expect(400);
      expect(response.body).toMatchObject({ code: 'invalid_name', details: { field: 'name', omitted: 11 } });
      expect(response.body.details.errors).toHaveLength(20);
      expect(response.body.details.errors[0]).toEqual({ field: 'name', issue: response.body.details.issue });
    });

    it('lists 20 issues whole, without omitted', async () => {
      const unknown = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`extra${i}`, i]));
      const response = await create({ name: 'Twenty unknown fields', ...unknown }).expect(400);
      expect(response.body.details.errors).toHaveLength(20);
      expect(response.body.details).not.toHaveProperty('omitted');
    });

    it('refuses a body that is not a JSON object', async () => {
      const response = await createFromJson('[1,2]').expect(400);
      expect(response.body).toMatchObject({ code: 'validation_error', details: { field: 'body' } });
    });

    it.each([
      ['an array', ['a']],
      ['a string', 'text'],
      ['an object with 65 keys', Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i]))],
      ['over 16 KB', { blob: 'x'.repeat(16 * 1024) }],
      ['nested 6 levels deep', { a: { b: { c: { d: { e: { f: 1 } } } } } }],
      ['a key starting with $', { $or: 1 }],
      ['a null value', { a: null }],
      ['a string with U+0000', { a: 'nul\u0000byte' }],
      ['a string with an unpaired surrogate', { a: 'half \ud83d' }],
      ['a key with an unpaired surrogate', { '\udc00': 1 }],
      // The key rules held at the top level only: each of these was 201.
      ['a nested key starting with $', { a: { $x: 1 } }],
      ['a nested empty key', { a: { '': 1 } }],
      ['a nested key of 300 characters', { a: { ['k'.repeat(300)]: 1 } }],
      ['a nested null value', { a: { b: null } }],
      ['a key starting with $ in an object in an array', { a: [{ $gt: 1 }] }],
      ['a null in an array', { tags: ['x', null] }],
    ])('answers 400 invalid_metadata for metadata that is %s', async (_case, metadata) => {
      const response = await create({ name: `Bad metadata ${_case}`, metadata }).expect(400);
      expect(response.body).toMatchObject({ code: 'invalid_metadata', details: { field: 'metadata' } });
    });

    it('answers 400 invalid_metadata for a number beyond double precision rather than store it as null', async () => {
      const response = await createFromJson(
        '{"name": "Huge number", "metadata": {"a": {"b": 1e400}}}',
      ).expect(400);
      expect(response.body).toMatchObject({ code: 'invalid_metadata', details: { field: 'metadata' } });
    });

    it('keeps metadata keys named like members of Object.prototype, on create and on merge', async () => {
      const created = await create({
        name: 'Prototype keys',
        metadata: { toString: 't', valueOf: 'v' },
      }).expect(201);
      expect(created.body.metadata).toEqual({ toString: 't', valueOf: 'v' });
      const merged = await t.http
        .patch(`/v1/datasets/${created.body.id}`)
        .set(bearer(key))
        .send({ metadata: { hasOwnProperty: 'h', toString: null } })
        .expect(200);
      expect(merged.body.metadata).toEqual({ valueOf: 'v', hasOwnProperty: 'h' });
    });

    it.each([
      ['{"constructor": "c"}', 'metadata.constructor'],
      ['{"a": {"__proto__": {"polluted": true}}}', 'metadata.a.__proto__'],
      ['{"a": [{"prototype": 1}]}', 'metadata.a[0].prototype'],
    ])(
      'answers 400 invalid_metadata for the reserved key in %s, rather than drop it',
      async (metadata, field) => {
        const response = await createFromJson(`{"name": "Reserved key", "metadata": ${metadata}}`).expect(
          400,
        );
        expect(response.body).toMatchObject({ code: 'invalid_metadata', details: { field } });
        expect(response.body.details.issue).toMatch(/^is a reserved name/);
      },
    );

    it('answers invalid_name for a bad name even beside a reserved or dropped key, naming every issue', async () => {
      const reserved = await createFromJson('{"name": "", "metadata": {"prototype": 1}}').expect(400);
      expect(reserved.body).toMatchObject({ code: 'invalid_name', details: { field: 'name' } });
      expect(reserved.body.details.errors.map((e: { field: string }) => e.field)).toEqual([
        'name',
        'metadata.prototype',
      ]);

      const dropped = await create({ toString: 1 }).expect(400);
      expect(dropped.body).toMatchObject({ code: 'invalid_name', details: { field: 'name' } });
      expect(dropped.body.details.errors.map((e: { field: string }) => e.field)).toEqual([
        'name',
        'toString',
      ]);

      const alone = await create({ name: 'Fine name', toString: 1 }).expect(400);
      expect(alone.body).toMatchObject({ code: 'validation_error', details: { field: 'toString' } });
      const reservedAndDropped = await createFromJson('{"name": "Fine name", "constructor": 1}').expect(400);
      expect(reservedAndDropped.body.details.errors).toEqual([
        { field: 'constructor', issue: expect.stringMatching(/^is a reserved name/) },
      ]);
    });

    it('counts a metadata key in characters, not UTF-16 units', async () => {
      const created = await create({ name: 'Emoji key', metadata: { ['😀'.repeat(256)]: 1 } }).expect(201);
      expect(Object.keys(created.body.metadata)).toEqual(['😀'.repeat(256)]);
      const response = await create({ name: 'Emoji key 2', metadata: { ['😀'.repeat(257)]: 1 } }).expect(400);
      expect(response.body).toMatchObject({
        code: 'invalid_metadata',
        details: { issue: 'keys must be 1-256 characters' },
      });
    });

    it('answers 400, not a crash, for a body nested 10,000 levels deep', async () => {
      const response = await createFromJson(
        `{"name":"Deep","metadata":{"a":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`,
      ).expect(400);
      expect(response.body).toMatchObject({
        code: 'validation_error',
        details: { field: 'body', issue: 'must not nest more than 32 levels deep' },
      });
    });

    it('answers 400 for a body of more than 5,000 keys in all, before anything copies it', async () => {
      // Counted over every object of the body: 2 top-level keys, `metadata`'s one, and those under it.
      const body = (keys: number) => ({
        name: 'Many keys',
        metadata: { a: Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, 1])) },
      });
      const within = await create(body(4_997)).expect(400);
      expect(within.body).toMatchObject({ code: 'invalid_metadata' });
      const beyond = await create(body(4_998)).expect(400);
      expect(beyond.body).toMatchObject({
        code: 'validation_error',
        details: { field: 'body', issue: 'must not hold more than 5000 keys in all' },
      });
      // A key count that class-transformer would take seconds over (its copy is quadratic in it).
      const huge = await create(body(200_000)).expect(400);
      expect(huge.body).toMatchObject({ code: 'validation_error', details: { field: 'body' } });
    });

    it('accepts metadata at the limits: 64 keys, 5 levels', async () => {
      const wide = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, i]));
      await create({ name: 'Wide metadata', metadata: wide }).expect(201);
      await create({ name: 'Deep metadata', metadata: { a: { b: { c: { d: { e: 1 } } } } } }).expect(201);
    });

    it('answers 409 dataset_name_conflict for a name already used in the account, ignoring case', async () => {
      await create({ name: 'Unique Name' }).expect(201);
      const response = await create({ name: 'unique name' }).expect(409);
      expect(response.body).toMatchObject({ code: 'dataset_name_conflict', details: { field: 'name' } });
    });

    it('stores a name in NFC, so that its composed and decomposed forms are one name (409)', async () => {
      const decomposed = await create({ name: 'Cafe\u0301 menu' }).expect(201);
      expect(decomposed.body.name).toBe('Caf\u00e9 menu');
      const composed = await create({ name: 'CAF\u00c9 MENU' }).expect(409);
      expect(composed.body.code).toBe('dataset_name_conflict');
    });

    it('keeps a name that is visible beside format characters, as sent', async () => {
      const response = await create({ name: 'Zero\u200bwidth \u3164 \u2764\ufe0f' }).expect(201);
      expect(response.body.name).toBe('Zero\u200bwidth \u3164 \u2764\ufe0f');
    });

    it('lets two accounts use the same name', async () => {
      await create({ name: 'Shared Name' }).expect(201);
      await create({ name: 'Shared Name' }, other).expect(201);
    });

    it('answers 422 dataset_limit_reached for the 1,001st dataset of an account', async () => {
      const full = await t.createApiKey();
      // 999 rows directly, then the 1,000th through the API: the limit counts both alike.
      await t.sql.query(
        `INSERT INTO datasets (id, account_id, name)
         SELECT 'ds_seed' || lpad(i::text, 15, '0'), $1, 'seeded ' || i FROM generate_series(1, 999) AS i`,
        [full.account_id],
      );
      await create({ name: 'The thousandth' }, full).expect(201);
      const response = await create({ name: 'One too many' }, full).expect(422);
      expect(response.body).toMatchObject({ code: 'dataset_limit_reached', details: { limit: 1000 } });
      const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM datasets WHERE account_id = $1', [
        full.account_id,
      ]);
      expect(rows[0].n).toBe(1000);
    });

    it('holds the limit under concurrent creation', async () => {
      const racer = await t.createApiKey();
      await t.sql.query(
        `INSERT INTO datasets (id, account_id, name)
         SELECT 'ds_race' || lpad(i::text, 15, '0'), $1, 'seeded ' || i FROM generate_series(1, 995) AS i`,
        [racer.account_id],
      );
      const responses = await Promise.all(
        Array.from({ length: 12 }, (_, i) => create({ name: `race ${i}` }, racer)),
      );
      expect(responses.filter((r) => r.status === 201)).toHaveLength(5);
      expect(responses.filter((r) => r.status === 422)).toHaveLength(7);
    });
  });

  describe('GET /v1/datasets', () => {
    let lister: CreatedKey;
    beforeAll(async () => {
      lister = await t.createApiKey();
      for (const name of ['bravo', 'Alpha', 'charlie']) await create({ name }, lister).expect(201);
    });

    it('lists only the account’s datasets in the envelope, newest first by default', async () => {
      const response = await t.http.get('/v1/datasets').set(bearer(lister)).expect(200);
      expect(response.body).toMatchObject({ total: 3, limit: 20, offset: 0, has_more: false });
      expect(response.body.datasets.map((d: { name: string }) => d.name)).toEqual([
        'charlie',
        'Alpha',
        'bravo',
      ]);
    });

    it.each([
      ['name', ['Alpha', 'bravo', 'charlie']],
      ['-name', ['charlie', 'bravo', 'Alpha']],
      ['created_at', ['bravo', 'Alpha', 'charlie']],
      ['-created_at', ['charlie', 'Alpha', 'bravo']],
    ])('sorts by %s', async (sort, names) => {
      const response = await t.http.get('/v1/datasets').query({ sort }).set(bearer(lister)).expect(200);
      expect(response.body.datasets.map((d: { name: string }) => d.name)).toEqual(names);
    });

    it('pages with limit and offset and says when there is more', async () => {
      const first = await t.http
        .get('/v1/datasets')
        .query({ limit: 2, sort: 'name' })
        .set(bearer(lister))
        .expect(200);
      expect(first.body).toMatchObject({ total: 3, limit: 2, offset: 0, has_more: true });
      const second = await t.http
        .get('/v1/datasets')
        .query({ limit: 2, offset: 2, sort: 'name' })
        .set(bearer(lister))
        .expect(200);
      expect(second.body).toMatchObject({ total: 3, limit: 2, offset: 2, has_more: false });
      expect(second.body.datasets.map((d: { name: string }) => d.name)).toEqual(['charlie']);
    });

    it('keeps a stable order for equal creation times across pages', async () => {
      const stable = await t.createApiKey();
      await t.sql.query(
        `INSERT INTO datasets (id, account_id, name, created_at)
         SELECT 'ds_same' || lpad(i::text, 15, '0'), $1, 'same ' || i, '2026-01-01T00:00:00Z'
           FROM generate_series(1, 25) AS i`,
        [stable.account_id],
      );
      const seen: string[] = [];
      for (let offset = 0; offset < 25; offset += 7) {
        const page = await t.http
          .get('/v1/datasets')
          .query({ limit: 7, offset })
          .set(bearer(stable))
          .expect(200);
        seen.push(...page.body.datasets.map((d: { id: string }) => d.id));
      }
      expect(new Set(seen).size).toBe(25);
      expect(seen).toEqual([...seen].sort().reverse());
    });

    it.each([
      [{ limit: 0 }, 'limit'],
      [{ limit: 101 }, 'limit'],
      [{ limit: 'ten' }, 'limit'],
      [{ offset: -1 }, 'offset'],
      [{ sort: 'size' }, 'sort'],
      [{ colour: 'blue' }, 'colour'],
    ])('answers 400 validation_error for %j', async (query, field) => {
      const response = await t.http.get('/v1/datasets').query(query).set(bearer(lister)).expect(400);
      expect(response.body).toMatchObject({ code: 'validation_error', details: { field } });
    });

    it('requires authentication', async () => {
      const response = await t.http.get('/v1/datasets').expect(401);
      expect(response.body.code).toBe('authentication_required');
    });
  });

  describe('GET /v1/datasets/:id', () => {
    it('returns the account’s own dataset', async () => {
      const created = await create({ name: 'Readable' }).expect(201);
      const response = await t.http.get(`/v1/datasets/${created.body.id}`).set(bearer(key)).expect(200);
      // The created dataset, and (an extension of a single dataset's answer) its fusion weights: equal ones
      // until the service has judged its documents.
      expect(response.body).toEqual({
        ...created.body,
        fusion: {
          weights: { keyword: 0.5, semantic: 0.5 },
          source: 'default',
          chosen_at: null,
          pseudo_queries: null,
          evidence: null,
        },
      });
    });

    it("answers 404 dataset_not_found for another account's private dataset, exactly as for a missing one", async () => {
      const hidden = await create({ name: 'Private' }, other).expect(201);
      const missingId = 'ds_0000000000000000000000';
      const forOther = await t.http.get(`/v1/datasets/${hidden.body.id}`).set(bearer(key)).expect(404);
      const forMissing = await t.http.get(`/v1/datasets/${missingId}`).set(bearer(key)).expect(404);
      expect(forOther.body).toEqual({
        error: `Dataset "${hidden.body.id}" not found`,
        code: 'dataset_not_found',
        details: { dataset_id: hidden.body.id },
      });
      expect(forMissing.body).toEqual({
        error: `Dataset "${missingId}" not found`,
        code: 'dataset_not_found',
        details: { dataset_id: missingId },
      });
    });

    it('answers 404 for an id that is not a dataset id', async () => {
      const response = await t.http.get('/v1/datasets/not-an-id').set(bearer(key)).expect(404);
      expect(response.body).toMatchObject({
        code: 'dataset_not_found',
        details: { dataset_id: 'not-an-id' },
      });
    });

    it('shows a long id back cut short, and an empty one quoted', async () => {
      const long = await t.http
        .get(`/v1/datasets/${'x'.repeat(5_000)}`)
        .set(bearer(key))
        .expect(404);
      expect(long.body).toEqual({
        error: `Dataset "${'x'.repeat(64)}…" not found`,
        code: 'dataset_not_found',
        details: { dataset_id: `${'x'.repeat(64)}…` },
      });
      const empty = await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: '', query: 'x' })
        .expect(404);
      expect(empty.body).toMatchObject({ error: 'Dataset "" not found', details: { dataset_id: '' } });
    });

    it('serves a public dataset to anonymous callers and to other accounts', async () => {
      const shared = await create({ name: 'Public', is_public: true }, other).expect(201);
      await t.http.get(`/v1/datasets/${shared.body.id}`).expect(200);
      await t.http.get(`/v1/datasets/${shared.body.id}`).set(bearer(key)).expect(200);
    });

    it('hides a private dataset from anonymous callers', async () => {
      const hidden = await create({ name: 'Anonymous cannot see' }).expect(201);
      const response = await t.http.get(`/v1/datasets/${hidden.body.id}`).expect(404);
      expect(response.body.code).toBe('dataset_not_found');
    });
  });

  describe('PATCH /v1/datasets/:id', () => {
    it('changes only the fields sent and moves updated_at', async () => {
      const created = await create({ name: 'Patch me', description: 'before', metadata: { a: 1 } }).expect(
        201,
      );
      await new Promise((resolve) => setTimeout(resolve, 5));
      const response = await t.http
        .patch(`/v1/datasets/${created.body.id}`)
        .set(bearer(key))
        .send({ description: 'after' })
        .expect(200);
      expect(response.body).toMatchObject({
        name: 'Patch me',
        description: 'after',
        metadata: { a: 1 },
        is_public: false,
      });
      expect(Date.parse(response.body.updated_at)).toBeGreaterThan(Date.parse(created.body.updated_at));
      expect(response.body.created_at).toBe(created.body.created_at);
    });

    it('merges metadata key by key and removes keys set to null', async () => {
      const created = await create({
        name: 'Merge',
        metadata: { keep: 1, change: 'old', drop: true },
      }).expect(201);
      const response = await t.http
        .patch(`/v1/datasets/${created.body.id}`)
        .set(bearer(key))
        .send({ metadata: { change: 'new', drop: null, add: [1, 2] } })
        .expect(200);
      expect(response.body.metadata).toEqual({ keep: 1, change: 'new', add: [1, 2] });
    });

    it('refuses a merge whose result exceeds the metadata limits', async () => {
      const half = (prefix: string) =>
        Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`${prefix}${i}`, i]));
      const created = await create({ name: 'Merge limit', metadata: half('a') }).expect(201);
      const response = await t.http
        .patch(`/v1/datasets/${created.body.id}`)
        .set(bearer(key))
        .send({ metadata: half('b') })
        .expect(400);
      expect(response.body).toMatchObject({
        code: 'invalid_metadata',
        details: { field: 'metadata', errors: [{ field: 'metadata', issue: expect.any(String) }] },
      });
      const after = await t.http.get(`/v1/datasets/${created.body.id}`).set(bearer(key)).expect(200);
      expect(Object.keys(after.body.metadata)).toHaveLength(40);
    });

    it('clears the description with null and renames with a trimmed name', async () => {
      const created = await create({ name: 'Rename me', description: 'gone soon' }).expect(201);
      const response = await t.http
        .patch(`/v1/datasets/${created.body.id}`)
        .set(bearer(key))
        .send({ name: '  Renamed  ', description: null, is_public: true })
        .expect(200);
      expect(response.body).toMatchObject({ name: 'Renamed', description: null, is_public: true });
    });

    it('refuses invisible and control-character names on update too, and stores a rename in NFC', async () => {
      const created = await create({ name: 'Rename me in NFC' }).expect(201);
      const path = `/v1/datasets/${created.body.id}`;
      for (const [name, issue] of [
        ['\u200b', 'must contain visible text'],
        ['\u001b[2J', 'must not contain control characters'],
      ]) {
        const response = await t.http.patch(path).set(bearer(key)).send({ name }).expect(400);
        expect(response.body).toMatchObject({ code: 'invalid_name', details: { field: 'name', issue } });
      }
      const renamed = await t.http
        .patch(path)
        .set(bearer(key))
        .send({ name: 'Re\u0301sume\u0301' })
        .expect(200);
      expect(renamed.body.name).toBe('R\u00e9sum\u00e9');
    });

    it('answers 409 when renaming onto another dataset of the account', async () => {
      await create({ name: 'Taken' }).expect(201);
      const created = await create({ name: 'Wants the name' }).expect(201);
      const response = await t.http
        .patch(`/v1/datasets/${created.body.id}`)
        .set(bearer(key))
        .send({ name: 'TAKEN' })
        .expect(409);
      expect(response.body.code).toBe('dataset_name_conflict');
    });

    it('answers 400 invalid_name for an empty name and validation_error for null is_public', async () => {
      const created = await create({ name: 'Patch validation' }).expect(201);
      const path = `/v1/datasets/${created.body.id}`;
      expect((await t.http.patch(path).set(bearer(key)).send({ name: ' ' }).expect(400)).body.code).toBe(
        'invalid_name',
      );
      expect((await t.http.patch(path).set(bearer(key)).send({ name: null }).expect(400)).body.code).toBe(
        'invalid_name',
      );
      expect(
        (await t.http.patch(path).set(bearer(key)).send({ is_public: null }).expect(400)).body.code,
      ).toBe('validation_error');
    });

    it('removes a top-level key set to null in a PATCH, and refuses a nested null or key rule broken', async () => {
      const created = await create({ name: 'Patch nested', metadata: { a: { b: 1, c: 2 }, d: 3 } }).expect(
        201,
      );
      const path = `/v1/datasets/${created.body.id}`;
      for (const metadata of [{ a: { b: null } }, { a: { $x: 1 } }, { a: { '': 1 } }, { a: [null] }]) {
        const response = await t.http.patch(path).set(bearer(key)).send({ metadata }).expect(400);
        expect(response.body).toMatchObject({ code: 'invalid_metadata', details: { field: 'metadata' } });
      }
      const patched = await t.http
        .patch(path)
        .set(bearer(key))
        .send({ metadata: { a: { c: 2 }, d: null } })
        .expect(200);
      expect(patched.body.metadata).toEqual({ a: { c: 2 } });
    });

    it('refuses unknown fields and non-object metadata in a PATCH', async () => {
      const created = await create({ name: 'Patch strictness' }).expect(201);
      const path = `/v1/datasets/${created.body.id}`;
      const unknown = await t.http.patch(path).set(bearer(key)).send({ colour: 'red' }).expect(400);
      expect(unknown.body).toMatchObject({ code: 'validation_error', details: { field: 'colour' } });
      const metadata = await t.http
        .patch(path)
        .set(bearer(key))
        .send({ metadata: [1] })
        .expect(400);
      expect(metadata.body.code).toBe('invalid_metadata');
    });

    it("answers 404 for another account's private dataset and 403 for its public one", async () => {
      const hidden = await create({ name: 'Not yours' }, other).expect(201);
      const shared = await create({ name: 'Read only for you', is_public: true }, other).expect(201);
      expect(
        (
          await t.http
            .patch(`/v1/datasets/${hidden.body.id}`)
            .set(bearer(key))
            .send({ name: 'x' })
            .expect(404)
        ).body.code,
      ).toBe('dataset_not_found');
      expect(
        (
          await t.http
            .patch(`/v1/datasets/${shared.body.id}`)
            .set(bearer(key))
            .send({ name: 'x' })
            .expect(403)
        ).body.code,
      ).toBe('forbidden');
    });
  });

  describe('DELETE /v1/datasets/:id', () => {
    it('answers 204 with no body, after which the dataset is gone', async () => {
      const created = await create({ name: 'Delete me' }).expect(201);
      const response = await t.http.delete(`/v1/datasets/${created.body.id}`).set(bearer(key)).expect(204);
      expect(response.text).toBe('');
      await t.http.get(`/v1/datasets/${created.body.id}`).set(bearer(key)).expect(404);
      await t.http.delete(`/v1/datasets/${created.body.id}`).set(bearer(key)).expect(404);
    });

    it('refuses a body it would ignore, deleting nothing; takes an empty object', async () => {
      const created = await create({ name: 'Not on a whim' }).expect(201);
      const withBody = await t.http
        .delete(`/v1/datasets/${created.body.id}`)
        .set(bearer(key))
        .send({ dry_run: true })
        .expect(400);
      expect(withBody.body).toMatchObject({
        code: 'validation_error',
        details: { field: 'body', issue: 'must be empty: DELETE takes no body' },
      });
      const asText = await t.http
        .get(`/v1/datasets/${created.body.id}`)
        .set(bearer(key))
        .set('Content-Type', 'text/plain')
        .send('fields=all')
        .expect(400);
      expect(asText.body).toMatchObject({ details: { field: 'body' } });
      await t.http.get(`/v1/datasets/${created.body.id}`).set(bearer(key)).expect(200);
      await t.http.delete(`/v1/datasets/${created.body.id}`).set(bearer(key)).send({}).expect(204);
    });

    it("answers 404 for another account's dataset and leaves it in place", async () => {
      const hidden = await create({ name: 'Keep me' }, other).expect(201);
      await t.http.delete(`/v1/datasets/${hidden.body.id}`).set(bearer(key)).expect(404);
      await t.http.get(`/v1/datasets/${hidden.body.id}`).set(bearer(other)).expect(200);
    });

    it('answers 404 to many concurrent deletes of a missing dataset and stays ready', async () => {
      const responses = await Promise.all(
        Array.from({ length: 60 }, () =>
          t.http.delete('/v1/datasets/ds_0000000000000000000000').set(bearer(key)).timeout(15_000),
        ),
      );
      expect(responses.map((r) => r.status)).toEqual(Array(60).fill(404));
      await t.http.get('/ready').expect(200);
    });

    it('frees the name for a new dataset', async () => {
      const created = await create({ name: 'Recycled' }).expect(201);
      await t.http.delete(`/v1/datasets/${created.body.id}`).set(bearer(key)).expect(204);
      await create({ name: 'Recycled' }).expect(201);
    });
  });
});
