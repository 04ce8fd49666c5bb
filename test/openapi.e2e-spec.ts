import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { waitForDocument } from './utils/documents.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';

const run = promisify(execFile);

type Example = { summary?: string; value: Record<string, unknown> };
type Media = { schema?: { $ref?: string }; examples?: Record<string, Example> };
type Response = { $ref?: string; description?: string; content?: Record<string, Media> };
type Parameter = { name: string; in: string; example?: unknown; schema?: { example?: unknown } };
type Operation = {
  operationId: string;
  security?: unknown[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, Response>;
};

/** The OpenAPI document as a newcomer's tools read it: generators, linters, Swagger UI. */
describe('The OpenAPI document', () => {
  let t: TestApp;
  let key: CreatedKey;
  let document: {
    servers: { url: string }[];
    info: { license?: { name: string } };
    paths: Record<string, Record<string, Operation>>;
    components: {
      schemas: Record<string, { properties: Record<string, any>; enum?: string[] }>; // eslint-disable-line @typescript-eslint/no-explicit-any -- schemas are read as found
      responses: Record<string, Response>;
    };
  };
  const operations = () =>
    Object.entries(document.paths).flatMap(([path, item]) =>
      Object.entries(item).map(([method, operation]) => ({ where: `${method} ${path}`, operation })),
    );
  const resolve = (response: Response): Response =>
    response.$ref ? document.components.responses[response.$ref.split('/').pop()!] : response;
  const operation = (id: string) => operations().find((o) => o.operation.operationId === id)!.operation;

  beforeAll(async () => {
    t = await startTestApp();
    key = await t.createApiKey();
    document = (await t.http.get('/docs/openapi.json').expect(200)).body;
  });
  afterAll(() => t.close());

  it("passes Redocly's recommended rules with no error", async () => {
    // Exits 1 on an error; warnings (docs/clients.md says which, and why) leave it at 0.
    const { stdout, stderr } = await run(
      process.execPath,
      ['node_modules/@redocly/cli/bin/cli.js', 'lint', `${t.url}/docs/openapi.json`, '--format=summary'],
      {
        env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', REDOCLY_TELEMETRY: 'off' },
      },
    );
    expect(`${stdout}${stderr}`).toMatch(/validated in/);
    expect(`${stdout}${stderr}`).not.toMatch(/^error/m);
  });

  it('names every operation for the code generators, the server, the health routes and the license', () => {
    const ids = operations().map(({ operation }) => operation.operationId);
    expect(ids.filter((id) => !/^[a-z][a-zA-Z]+$/.test(id) || /Controller/.test(id))).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(
      expect.arrayContaining([
        'createDataset',
        'createDocument',
        'uploadDocument',
        'bulkUploadDocuments',
        'searchDataset',
      ]),
    );
    expect(document.servers).toEqual([expect.objectContaining({ url: t.url })]);
    expect(document.info.license?.name).toEqual(expect.any(String));
    for (const path of ['/health', '/ready']) expect(document.paths[path].get.security).toEqual([]);
    expect(document.paths['/ready'].get.responses['200'].content!['application/json'].schema).toEqual({
      $ref: '#/components/schemas/ReadinessDto',
    });
    expect(Object.keys(document.components.schemas.ReadinessDto.properties)).toEqual([
      'status',
      'checks',
      'search',
    ]);
  });

  it('types error codes as one enum and shows each status its own examples', () => {
    const codes: string[] = document.components.schemas.ErrorCode.enum!;
    expect(codes).toEqual(expect.arrayContaining(['dataset_not_found', 'rate_limit_exceeded']));
    // A reference with a description of its own is an `allOf` of one, in OpenAPI 3.0.
    const { code, details } = document.components.schemas.ErrorResponseDto.properties;
    expect(code.allOf).toEqual([{ $ref: '#/components/schemas/ErrorCode' }]);
    expect(details.allOf).toEqual([{ $ref: '#/components/schemas/ErrorDetailsDto' }]);
    for (const { where, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400 || where.includes('/ready')) continue;
        const examples = resolve(response).content!['application/json'].examples!;
        // Each example is of its own code, which is one of the enum's and belongs to the status.
        for (const [name, example] of Object.entries(examples)) {
          expect([where, status, name, codes.includes(name)]).toEqual([where, status, name, true]);
          expect(example.value.code).toBe(name);
        }
        expect([where, status, resolve(response).description]).toEqual([
          where,
          status,
          expect.stringContaining(`\`${Object.keys(examples)[0]}\``),
        ]);
      }
    }
    // A route lists the statuses where it adds codes of its own; the rest are the shared ranges.
    const create = operation('createDataset').responses;
    expect(Object.keys(create).sort()).toEqual(['201', '400', '409', '422', '4XX', '5XX']);
    expect(Object.keys(create['409'].content!['application/json'].examples!)).toEqual([
      'dataset_name_conflict',
      'idempotency_key_in_progress',
    ]);
    expect(create['4XX']).toEqual({ $ref: '#/components/responses/ClientError' });
    const shared = resolve(create['4XX']).content!['application/json'].examples!;
    expect(Object.keys(shared)).toEqual(
      expect.arrayContaining(['authentication_required', 'insufficient_scope', 'rate_limit_exceeded']),
    );
    expect(Object.keys(shared)).not.toContain('dataset_not_found');
    expect(shared.rate_limit_exceeded.value).toMatchObject({
      code: 'rate_limit_exceeded',
      retry_after: expect.any(Number),
    });
    expect(
      Object.keys(operation('uploadDocument').responses['413'].content!['application/json'].examples!),
    ).toEqual(['file_too_large', 'payload_too_large']);
  });

  it('gives Idempotency-Key no example value, which Swagger UI would send with every try', () => {
    for (const id of [
      'createDataset',
      'createDocument',
      'uploadDocument',
      'bulkUploadDocuments',
      'createWebhook',
    ]) {
      const header = operation(id).parameters!.find((p) => p.name === 'Idempotency-Key')!;
      expect([id, header.example, header.schema?.example]).toEqual([id, undefined, undefined]);
    }
  });

  it('has examples that run as they stand once the dataset id is put in', async () => {
    const schemas = document.components.schemas;
    const exampleOf = (schema: string) =>
      Object.fromEntries(
        Object.entries<{ example?: unknown }>(schemas[schema].properties).flatMap(([name, property]) =>
          property.example === undefined ? [] : [[name, property.example]],
        ),
      );
    const dataset = await t.http.post('/v1/datasets').set(bearer(key)).send(exampleOf('CreateDatasetDto'));
    expect(dataset.status).toBe(201);
    const created = await t.http
      .post(`/v1/datasets/${dataset.body.id}/documents`)
      .set(bearer(key))
      .send(exampleOf('UploadTextDocumentDto'))
      .expect(201);
    await waitForDocument(t.http, key, dataset.body.id, created.body.document_id);

    const examples = operation('searchDataset').requestBody!.content['application/json'].examples!;
    expect(Object.keys(examples)).toEqual(['plain', 'filtered']);
    for (const [name, example] of Object.entries(examples)) {
      expect(example.value.dataset_id).toBe('REPLACE_WITH_YOUR_DATASET_ID');
      const response = await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ ...example.value, dataset_id: dataset.body.id })
        .expect(200);
      expect([name, response.body.results.map((r: { document_id: string }) => r.document_id)]).toEqual([
        name,
        [created.body.document_id],
      ]);
    }
    const batch = operation('batchSearchDataset').requestBody!.content['application/json'].examples!;
    const answered = await t.http
      .post('/v1/mcp/batch-query')
      .set(bearer(key))
      .send({ ...batch.plain.value, dataset_id: dataset.body.id })
      .expect(200);
    expect(answered.body.results[0].results).toHaveLength(1);
    const evaluation = operation('evaluateSearch').requestBody!.content['application/json'].examples!;
    expect(Object.keys(evaluation)).toEqual(['plain', 'graded']);
    const measured = await t.http
      .post(`/v1/datasets/${dataset.body.id}/evaluations`)
      .set(bearer(key))
      .send(evaluation.plain.value)
      .expect(200);
    expect(measured.body).toMatchObject({ dataset_id: dataset.body.id, queries: 1 });
  });

  it('takes a file on uploadDocument, and a Blob whose part says what it is', async () => {
    const dataset = (await t.http.post('/v1/datasets').set(bearer(key)).send({ name: 'Files' }).expect(201))
      .body;
    const upload = `/v1/datasets/${dataset.id}/documents/upload`;
    const file = await t.http
      .post(upload)
      .set(bearer(key))
      .attach('file', Buffer.from('# Setup\n\nInstall the agent.\n'), 'setup.md')
      .field('metadata', '{"category":"guide"}')
      .expect(201);
    expect(file.body).toMatchObject({ filename: 'setup.md', metadata: { category: 'guide' } });
    expect(file.headers.location).toBe(`/v1/datasets/${dataset.id}/documents/${file.body.document_id}`);
    // FormData names a Blob `blob`: the part's type and the content decide.
    const blob = await t.http
      .post(upload)
      .set(bearer(key))
      .attach('file', Buffer.from('# Notes\n\nThe blob is markdown.\n'), {
        filename: 'blob',
        contentType: 'text/markdown',
      })
      .expect(201);
    expect((await waitForDocument(t.http, key, dataset.id, blob.body.document_id)).status).toBe('ready');
    const json = await t.http.post(upload).set(bearer(key)).send({ content: 'text' }).expect(415);
    expect(json.body).toMatchObject({ code: 'unsupported_media_type' });
  });
});
