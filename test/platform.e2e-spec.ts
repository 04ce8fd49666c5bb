import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { bearer, freePort, runUntilExit, startTestApp, type TestApp } from './utils/test-app.js';
import { createTestDatabase } from './utils/test-database.js';
import { createUser } from './utils/users.js';

const run = promisify(execFile);

describe('Health, readiness and API documentation', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  it('answers /health and /ready without credentials', async () => {
    expect((await t.http.get('/health').expect(200)).body).toEqual({ status: 'ok' });
    expect((await t.http.get('/ready').expect(200)).body).toEqual({
      status: 'ready',
      checks: { postgres: { status: 'ok' }, redis: { status: 'ok' } },
      search: {
        mode: 'keyword_only',
        provider: null,
        model: null,
        dimensions: null,
        reason: 'EMBEDDING_PROVIDER=none',
      },
    });
  });

  it('serves Swagger UI at /docs', async () => {
    const response = await t.http.get('/docs').redirects(1).expect(200);
    expect(response.headers['content-type']).toContain('text/html');
    expect(response.text).toContain('swagger-ui');
  });

  it('publishes a valid OpenAPI 3 document with every route, the bearer scheme and error responses', async () => {
    const document = (await t.http.get('/docs/openapi.json').expect(200)).body;
    expect(document.openapi).toMatch(/^3\./);
    // swagger-parser is CommonJS over ESM, which jest cannot load on Node 20: validate in a child process.
    const { stdout } = await run(process.execPath, [
      'scripts/validate-openapi.mjs',
      `${t.url}/docs/openapi.json`,
    ]);
    expect(stdout.trim()).toBe(`valid OpenAPI ${document.openapi}`);

    expect(Object.keys(document.paths).sort()).toEqual([
      '/health',
      '/ready',
      '/v1/auth/session',
      '/v1/datasets',
      '/v1/datasets/import',
      '/v1/datasets/{dataset_id}',
      '/v1/datasets/{dataset_id}/documents',
      '/v1/datasets/{dataset_id}/documents/bulk',
      '/v1/datasets/{dataset_id}/documents/upload',
      '/v1/datasets/{dataset_id}/documents/{document_id}',
      '/v1/datasets/{dataset_id}/documents/{document_id}/chunks',
      '/v1/datasets/{dataset_id}/documents/{document_id}/chunks/{chunk_id}',
      '/v1/datasets/{dataset_id}/documents/{document_id}/file',
      '/v1/datasets/{dataset_id}/documents/{document_id}/reprocess',
      '/v1/datasets/{dataset_id}/documents/{document_id}/text',
      '/v1/datasets/{dataset_id}/evaluations',
      '/v1/datasets/{dataset_id}/export',
      '/v1/datasets/{dataset_id}/reembedding',
      '/v1/mcp',
      '/v1/mcp/batch-query',
      '/v1/mcp/datasets/{dataset_id}',
      '/v1/mcp/query',
      '/v1/webhooks',
      '/v1/webhooks/test',
      '/v1/webhooks/{webhook_id}',
      '/v1/webhooks/{webhook_id}/deliveries',
      '/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver',
      '/v1/webhooks/{webhook_id}/rotate-secret',
    ]);
    expect(Object.keys(document.paths['/v1/datasets'])).toEqual(expect.arrayContaining(['get', 'post']));
    expect(Object.keys(document.paths['/v1/datasets/{dataset_id}'])).toEqual(
      expect.arrayContaining(['get', 'patch', 'delete']),
    );
    expect(document.components.securitySchemes.bearer).toEqual(
      expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'opaque' }),
    );
    // OAuth2 with our own endpoints, and the session cookie: Swagger UI's "Authorize" offers all three.
    expect(document.components.securitySchemes.oauth2).toEqual(
      expect.objectContaining({
        type: 'oauth2',
        flows: {
          authorizationCode: expect.objectContaining({
            authorizationUrl: '/oauth/authorize',
            tokenUrl: '/oauth/token',
            scopes: expect.objectContaining({
              search: expect.any(String),
              'datasets:write': expect.any(String),
            }),
          }),
        },
      }),
    );
    expect(document.components.securitySchemes.session).toEqual({
      type: 'apiKey',
      in: 'cookie',
      name: 'svc_session',
      description: expect.any(String),
    });
    expect(document.paths['/v1/datasets'].post.security).toEqual(
      expect.arrayContaining([{ bearer: [] }, { oauth2: ['datasets:write'] }, { session: [] }]),
    );
    expect(document.components.schemas.ErrorResponseDto.properties.retry_after.type).toBe('integer');
    // What webhook deliveries POST, for receivers.
    expect(Object.keys(document.components.schemas.WebhookEventPayloadDto.properties)).toEqual([
      'id',
      'event',
      'timestamp',
      'data',
    ]);
    // The contract's integers are integers in the schema, not numbers.
    const integers = [
      ['QueryDto', 'limit'],
      ['BatchQueryDto', 'limit'],
      ['QueryResponseDto', 'query_time_ms'],
      ['BatchQueryResponseDto', 'query_time_ms'],
      ['SearchResultDto', 'semantic_rank'],
      ['SearchResultDto', 'keyword_rank'],
      ['DatasetResponseDto', 'document_count'],
      ['DocumentResponseDto', 'size_bytes'],
      ['DocumentResponseDto', 'chunks_created'],
      ['DocumentResponseDto', 'processing_time_ms'],
      ['ProgressDto', 'percent'],
      ...['DatasetListResponseDto', 'DocumentListResponseDto'].flatMap((list) =>
        ['total', 'limit', 'offset'].map((property) => [list, property]),
      ),
    ];
    for (const [schema, property] of integers) {
      const type = document.components.schemas[schema].properties[property].type;
      expect([schema, property, type]).toEqual([schema, property, 'integer']);
    }
    type Parameter = { name: string; schema: { type: string } };
    for (const path of ['/v1/datasets', '/v1/datasets/{dataset_id}/documents']) {
      const parameters = document.paths[path].get.parameters as Parameter[];
      for (const name of ['limit', 'offset']) {
        expect([path, name, parameters.find((p) => p.name === name)?.schema.type]).toEqual([
          path,
          name,
          'integer',
        ]);
      }
    }

    const errorBody = {
      content: {
        'application/json': expect.objectContaining({
          schema: { $ref: '#/components/schemas/ErrorResponseDto' },
        }),
      },
    };
    type Response = { headers?: Record<string, unknown>; $ref?: string };
    type Operation = { responses: Record<string, Response>; security?: unknown; requestBody?: unknown };
    // A status whose codes every route shares is one response of `components.responses`.
    const resolve = (response: Response): Response =>
      response.$ref ? document.components.responses[response.$ref.split('/').pop()!] : response;
    for (const [path, operations] of Object.entries<Record<string, Operation>>(document.paths)) {
      if (!path.startsWith('/v1/')) continue;
      for (const [method, operation] of Object.entries(operations)) {
        const where = `${method} ${path}`;
        // Signing in is the one API route that takes no credential: it is how a session is had. Asking
        // who is signed in, and signing out, take the session alone.
        const open = where === 'post /v1/auth/session';
        const security = open
          ? []
          : path === '/v1/auth/session'
            ? [{ session: [] }]
            : expect.arrayContaining([{ bearer: [] }]);
        expect([where, operation.security]).toEqual([where, security]);
        // A body is read, and the query checked, on every route: 400, 413 and 415 whatever it takes;
        // these and the other errors any route can meet are the ranges' responses.
        const statuses = ['4XX', '5XX'];
        for (const status of statuses) {
          expect([where, status, resolve(operation.responses[status])]).toEqual([
            where,
            status,
            expect.objectContaining(errorBody),
          ]);
        }
        // The success responses and the shared ranges list the headers every response carries.
        for (const [status, response] of Object.entries(operation.responses)
          .filter(([status]) => Number(status) < 400 || status.endsWith('XX'))
          .map(([status, response]) => [status, resolve(response)] as const)) {
          const headers = Object.keys(response.headers ?? {});
          const rateLimitHeaders = !open
            ? ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']
            : [];
          expect([where, status, headers]).toEqual([
            where,
            status,
            expect.arrayContaining([
              ...rateLimitHeaders,
              'X-Request-Id',
              ...(status === '429' ? ['Retry-After'] : []),
              ...(status === '201' && method === 'post' && !open ? ['Idempotent-Replayed'] : []),
            ]),
          ]);
          if (open) expect([where, status, headers]).not.toContain('X-RateLimit-Limit');
        }
      }
    }
    for (const path of ['/health', '/ready']) {
      expect(JSON.stringify(document.paths[path])).not.toContain('X-RateLimit');
    }
    // Request bodies are closed, as the server refuses fields it does not know.
    const requestSchemas = Object.values<Record<string, Operation>>(document.paths)
      .flatMap((operations) => Object.values(operations))
      .flatMap((operation) =>
        Object.values(
          (operation.requestBody as { content?: Record<string, { schema: { $ref?: string } }> } | undefined)
            ?.content ?? {},
        ),
      )
      // The MCP endpoints take a JSON-RPC message, which the MCP server validates.
      .flatMap(({ schema }) => (schema.$ref ? [schema.$ref.split('/').pop()!] : []));
    expect(
      document.paths['/v1/mcp'].post.requestBody.content['application/json'].schema.description,
    ).toContain('JSON-RPC');
    expect(new Set(requestSchemas)).toEqual(
      new Set([
        'CreateDatasetDto',
        'UpdateDatasetDto',
        'UploadTextDocumentDto',
        'UploadFileFormDto',
        'UpdateDocumentDto',
        'QueryDto',
        'BatchQueryDto',
        'EvaluationRequestDto',
        'SignInDto',
        'CreateWebhookDto',
        'RotateWebhookSecretDto',
        'UpdateWebhookDto',
        'TestWebhookDto',
      ]),
    );
    for (const name of requestSchemas) {
      expect([name, document.components.schemas[name].additionalProperties]).toEqual([name, false]);
    }
    // So, on a route that takes neither query nor body:
    const key = await t.createApiKey();
    const missing = '/v1/datasets/ds_0000000000000000000000';
    await t.http.get(`${missing}?include=documents`).set(bearer(key)).expect(400);
    await t.http.delete(missing).set(bearer(key)).send({ dry_run: true }).expect(400);
    await t.http.get(missing).set(bearer(key)).type('json').send('{').expect(400);
    await t.http
      .delete(missing)
      .set(bearer(key))
      .set('Content-Type', 'application/json; charset=latin1')
      .send('{}')
      .expect(415);
    expect(document.paths['/v1/mcp/query'].post.responses['503'].description).toContain(
      'embedding_unavailable',
    );
    expect(document.paths['/v1/mcp/query'].post.responses['502'].description).toContain('rerank_failed');
    expect(
      resolve(document.paths['/v1/datasets'].post.responses['5XX']).headers!['X-RateLimit-Limit'],
    ).toMatchObject({ description: expect.stringMatching(/absent with shutting_down/) });
    expect(document.components.schemas.DatasetResponseDto.properties.id.example).toMatch(/^ds_/);
    expect(document.paths['/v1/datasets'].post.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'Idempotency-Key',
          in: 'header',
          schema: expect.objectContaining({ pattern: '^[!-~]+$', maxLength: 255 }),
        }),
      ]),
    );
    const spaced = await t.http
      .post('/v1/datasets')
      .set(bearer(key))
      .set('Idempotency-Key', 'a b')
      .send({ name: 'Spaced key' })
      .expect(400);
    expect(spaced.body.code).toBe('invalid_idempotency_key');
  });

  it("documents PATCH's description as the nullable string the server takes", async () => {
    const document = (await t.http.get('/docs/openapi.json').expect(200)).body;
    expect(document.components.schemas.UpdateDatasetDto.properties.description).toMatchObject({
      type: 'string',
      nullable: true,
      maxLength: 1000,
    });
    const key = await t.createApiKey();
    const dataset = (
      await t.http.post('/v1/datasets').set(bearer(key)).send({ name: 'Described' }).expect(201)
    ).body;
    const patch = (description: unknown) =>
      t.http.patch(`/v1/datasets/${dataset.id}`).set(bearer(key)).send({ description });
    expect((await patch('Manuals').expect(200)).body.description).toBe('Manuals');
    expect((await patch(null).expect(200)).body.description).toBeNull();
    expect((await patch({ text: 'Manuals' }).expect(400)).body.details).toMatchObject({
      field: 'description',
    });
  });

  it('documents the bounds and nulls the server applies to filters and offset', async () => {
    const document = (await t.http.get('/docs/openapi.json').expect(200)).body;
    const key = await t.createApiKey();
    // `"filters": null` is no filter (docs/decisions.md, Search), as `{}` is.
    for (const schema of ['QueryDto', 'BatchQueryDto']) {
      expect([schema, document.components.schemas[schema].properties.filters.nullable]).toEqual([
        schema,
        true,
      ]);
    }
    const dataset = (
      await t.http.post('/v1/datasets').set(bearer(key)).send({ name: 'Null filters' }).expect(201)
    ).body;
    await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: dataset.id, query: 'anything', filters: null })
      .expect(200);
    // An offset past PostgreSQL's integer is refused.
    type Parameter = { name: string; schema: { maximum?: number } };
    for (const path of ['/v1/datasets', '/v1/datasets/{dataset_id}/documents']) {
      const parameters = document.paths[path].get.parameters as Parameter[];
      const offset = parameters.find((p) => p.name === 'offset')!;
      expect([path, offset.schema.maximum]).toEqual([path, 2_147_483_647]);
    }
    await t.http.get('/v1/datasets?offset=2147483647').set(bearer(key)).expect(200);
    await t.http.get('/v1/datasets?offset=2147483648').set(bearer(key)).expect(400);
  });

  it('documents each upload form under the media type the server reads it in', async () => {
    const document = (await t.http.get('/docs/openapi.json').expect(200)).body;
    // Both forms under both types (oneOf) documented a multipart `content` part and a JSON `file`,
    // which the server refuses.
    expect(document.paths['/v1/datasets/{dataset_id}/documents'].post.requestBody).toEqual({
      required: true,
      content: {
        'application/json': { schema: { $ref: '#/components/schemas/UploadTextDocumentDto' } },
        'multipart/form-data': { schema: { $ref: '#/components/schemas/UploadFileFormDto' } },
      },
    });
    const key = await t.createApiKey();
    const dataset = (
      await t.http.post('/v1/datasets').set(bearer(key)).send({ name: 'Upload forms' }).expect(201)
    ).body;
    const multipartText = await t.http
      .post(`/v1/datasets/${dataset.id}/documents`)
      .set(bearer(key))
      .field('content', 'text sent as a form field')
      .expect(400);
    expect(multipartText.body.details).toMatchObject({ field: 'content', issue: 'is not a known field' });
  });
});

describe('Readiness while Redis is down', () => {
  it('boots, reports 503 not_ready naming Redis, and keeps serving the API', async () => {
    const closedPort = await freePort();
    const t = await startTestApp({ REDIS_URL: `redis://127.0.0.1:${closedPort}` });
    try {
      const response = await t.http.get('/ready').expect(503);
      expect(response.body).toMatchObject({
        code: 'not_ready',
        details: { checks: { postgres: { status: 'ok' }, redis: { status: 'error' } } },
      });
      const key = await t.createApiKey();
      await t.http.post('/v1/datasets').set(bearer(key)).send({ name: 'Works without Redis' }).expect(201);

      // What needs the session store waits for it, with a code and a time to come back.
      const user = await createUser(t);
      const signIn = await t.http
        .post('/v1/auth/session')
        .send({ email: user.user.email, password: user.password })
        .expect(503);
      expect(signIn.body).toMatchObject({ code: 'session_store_unavailable' });
      expect(signIn.headers['retry-after']).toBe('5');
      const withCookie = await t.http
        .get('/v1/datasets')
        .set('Cookie', `svc_session=usr_${'A'.repeat(22)}.${'A'.repeat(43)}`)
        .expect(503);
      expect(withCookie.body.code).toBe('session_store_unavailable');
      const registration = await t.http
        .post('/oauth/register')
        .send({ redirect_uris: ['http://127.0.0.1:1/cb'] })
        .expect(503);
      expect(registration.body).toEqual({
        error: 'temporarily_unavailable',
        error_description: expect.any(String),
      });
      expect(registration.headers['retry-after']).toBe('5');
      expect(t.output()).not.toMatch(/"level":50/);
    } finally {
      await t.close();
    }
  });
});

describe('Swagger UI and the document', () => {
  it('may not be framed, and is not cached when it names the Host it was asked by', async () => {
    const t = await startTestApp();
    try {
      for (const path of ['/docs', '/docs/openapi.json']) {
        const response = await t.http.get(path).set('Host', 'evil.example').expect(200);
        expect(response.headers['x-frame-options']).toBe('DENY');
        expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
        expect(response.headers['cache-control']).toBe('no-store');
        expect(response.headers.vary).toMatch(/\bHost\b/);
      }
    } finally {
      await t.close();
    }
    const fixed = await startTestApp({ PUBLIC_BASE_URL: 'https://search.example.com', FORCE_HTTPS: 'false' });
    try {
      const response = await fixed.http.get('/docs/openapi.json').set('Host', 'evil.example').expect(200);
      expect(response.body.servers).toEqual([
        { url: 'https://search.example.com', description: 'This service' },
      ]);
      expect(response.headers['cache-control']).toBeUndefined();
    } finally {
      await fixed.close();
    }
  });

  it('refuses to start in production without PUBLIC_BASE_URL', async () => {
    const { code, output } = await runUntilExit({ NODE_ENV: 'production' });
    expect(code).toBe(78);
    expect(output).toContain('PUBLIC_BASE_URL is required in production');
  });
});

describe('Boot', () => {
  const MIGRATIONS = [
    'Init1732000000000',
    'Documents1732000000001',
    'TermStats1732000000002',
    'Reembedding1732000000003',
    'HalfvecIndex1732000000004',
    'ApiKeyChanges1732000000005',
    'EmptyTermStats1732000000006',
    'InlineEmbeddings1732000000007',
    'IdempotentReplayAsSent1732000000008',
    'UnicodeLexemes1732000000009',
    'Users1732000000010',
    'OAuth1732000000011',
    'Webhooks1732000000012',
    'ChunksWithoutVector1732000000013',
    'DatasetVectorIndex1732000000014',
    'VectorDimsStatistics1732000000015',
    'DatasetIndex1732000000016',
    'DatasetFusion1732000000017',
    'EmbeddingGenerations1732000000018',
    'PostingsWithoutForeignKey1732000000019',
    'IdempotentErrorAnswers1732000000020',
    'UnspacedScriptTerms1732000000021',
    'DocumentReplacement1732000000022',
    'DistributableContent1732000000023',
  ];

  it('migrates an empty database at boot, enabling the vector extension', async () => {
    const t = await startTestApp({}, { emptyDatabase: true });
    try {
      const { rows } = await t.sql.query(`SELECT extname FROM pg_extension WHERE extname = 'vector'`);
      expect(rows).toHaveLength(1);
      const migrations = await t.sql.query('SELECT name FROM schema_migrations');
      expect(migrations.rows.map((r) => r.name)).toEqual(MIGRATIONS);
      // The planner's statistics on the vectors' dimension, which every vector statement names.
      const statistics = await t.sql.query(
        `SELECT stxname FROM pg_statistic_ext WHERE stxrelid = 'chunks'::regclass`,
      );
      expect(statistics.rows).toEqual([{ stxname: 'chunks_vector_dims_stats' }]);
      // The 384-dimension HNSW index of migration 1, rebuilt over half precision by migration 4.
      const index = await t.sql.query(
        `SELECT indexdef FROM pg_indexes WHERE indexname = 'chunks_embedding_384_idx'`,
      );
      expect(index.rows[0].indexdef).toContain('halfvec_cosine_ops');
    } finally {
      await t.close();
    }
  });

  it('applies each migration once when several processes migrate at the same time', async () => {
    const database = await createTestDatabase(null);
    try {
      const env = { ...process.env, DATABASE_URL: database.url, NODE_ENV: 'test' };
      const results = await Promise.all(
        Array.from({ length: 3 }, () => run(process.execPath, ['dist/cli.js', 'migrate'], { env })),
      );
      const applied = results.map((r) => (JSON.parse(r.stdout) as { applied: string[] }).applied);
      expect(applied.flat()).toEqual(MIGRATIONS);
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      const { rows } = await client.query('SELECT count(*)::int AS n FROM schema_migrations');
      await client.end();
      expect(rows[0].n).toBe(MIGRATIONS.length);
    } finally {
      await database.drop();
    }
  });

  it('refuses to migrate a database not encoded in UTF-8, saying so', async () => {
    const database = await createTestDatabase(null, 'SQL_ASCII');
    try {
      const env = { ...process.env, DATABASE_URL: database.url, NODE_ENV: 'test' };
      await expect(run(process.execPath, ['dist/cli.js', 'migrate'], { env })).rejects.toMatchObject({
        code: 1,
        stderr: expect.stringContaining('The database must be encoded in UTF8, found SQL_ASCII'),
      });
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      const { rows } = await client.query(`SELECT to_regclass('schema_migrations') AS migrations`);
      await client.end();
      expect(rows[0].migrations).toBeNull();
    } finally {
      await database.drop();
    }
  });

  it('refuses to start with bad configuration, naming every bad variable', async () => {
    const { code, output } = await runUntilExit({
      PORT: 'abc',
      DATABASE_URL: 'mysql://x',
      RATE_LIMIT_API_KEY: '0',
      ROLE: 'boss',
    });
    expect(code).toBe(78);
    for (const name of ['PORT', 'DATABASE_URL', 'RATE_LIMIT_API_KEY', 'ROLE']) expect(output).toContain(name);
  });
});

describe('Admin command line', () => {
  it.each([
    [['api-keys', 'create'], '--account'],
    [['api-keys', 'create', '--acount', 'x'], "Unknown option '--acount'"],
    [['api-keys', 'create', '--account'], "Option '--account <value>' argument missing"],
  ])('answers the usage error of %j with exit code 2 and the usage', async (args, message) => {
    const failure = run(process.execPath, ['dist/cli.js', ...args]);
    await expect(failure).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining(message) });
    await expect(failure).rejects.toMatchObject({ stderr: expect.stringContaining('Usage') });
  });

  it('answers an unknown key id with a JSON error and exit code 1', async () => {
    const t = await startTestApp();
    try {
      await expect(t.cli('api-keys', 'revoke', 'key_0000000000000000000000')).rejects.toMatchObject({
        code: 1,
        stderr: expect.stringContaining('"code":"api_key_not_found"'),
      });
    } finally {
      await t.close();
    }
  });
});
