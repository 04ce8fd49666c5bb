import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { createDataset, waitForDocument } from './utils/documents.js';
import { FormBrowser, registerClient, TestClientProvider, tokensFor } from './utils/oauth.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { createUser, type CreatedUser } from './utils/users.js';

const FIXTURES = '../shared/fixtures';
const ACCEPT = 'application/json, text/event-stream';

interface Result {
  id: string;
  chunk_id: string;
  document_id: string;
  dataset_id: string;
  title: string;
  filename: string | null;
  url: string;
  page: number | null;
  chunk_index: number;
  char_start: number;
  char_end: number;
  score: number;
  content: string;
  metadata: Record<string, unknown>;
}

interface Fetched {
  id: string;
  title: string;
  text: string;
  url: string;
  page: number | null;
  offset: number;
  next_offset: number | null;
  total_characters: number;
  document_id: string;
}

/** The SDK's client connected to `url`, with an API key or a token in a static header. */
async function connect(url: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'test agent', version: '1.0.0' });
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

/** The structured content of a successful tool call, checked to agree with its text. */
function structured<T>(result: Awaited<ReturnType<Client['callTool']>>): T {
  const call = result as CallToolResult;
  if (call.isError) throw new Error(`tool failed: ${JSON.stringify(call.content)}`);
  const text = (call.content[0] as { text: string }).text;
  expect(JSON.parse(text)).toEqual(call.structuredContent);
  return call.structuredContent as T;
}

/** The contract's error body a failed tool call carries. */
function toolError(result: Awaited<ReturnType<Client['callTool']>>) {
  const call = result as CallToolResult;
  expect(call.isError).toBe(true);
  expect(call.structuredContent).toBeUndefined();
  return JSON.parse((call.content[0] as { text: string }).text) as {
    error: string;
    code: string;
    details?: Record<string, unknown>;
    retry_after?: number;
  };
}

/** One JSON-RPC message POSTed by hand, for what the SDK's client would never send. */
function post(t: TestApp, path: string, body: unknown, headers: Record<string, string> = {}) {
  return t.http
    .post(path)
    .set({ Accept: ACCEPT, 'Content-Type': 'application/json', ...headers })
    .send(typeof body === 'string' ? body : JSON.stringify(body));
}

/** The tools offered to any caller; writing needs credentials. */
const READ_TOOLS = ['search', 'batch_search', 'list_datasets', 'list_documents', 'fetch', 'evaluate'];

const GUIDE =
  'To install the router, connect the antenna and press the reset button for ten seconds.\n\n' +
  'The warranty covers water damage for two years.';

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } },
};

describe('MCP endpoint', () => {
  let t: TestApp;
  let key: CreatedKey;
  let otherKey: CreatedKey;
  let member: CreatedUser;
  let manuals: string;
  let openData: string;
  let elsewhere: string;
  let pdfId: string;
  let guideId: string;

  beforeAll(async () => {
    t = await startTestApp({
      SIGN_IN_MAX_ATTEMPTS: '1000',
      OAUTH_REGISTRATIONS_PER_HOUR: '1000',
      RATE_LIMIT_ANONYMOUS: '100000',
    });
    key = await t.createApiKey('acme');
    otherKey = await t.createApiKey('globex');
    member = await createUser(t, { account: 'acme' });
    manuals = await createDataset(t.http, key, { name: 'Manuals', description: 'How to use our products' });
    openData = await createDataset(t.http, key, { name: 'Open data', is_public: true });
    elsewhere = await createDataset(t.http, otherKey, { name: 'Globex private' });

    const guide = await t.http
      .post(`/v1/datasets/${manuals}/documents`)
      .set(bearer(key))
      .send({
        content: GUIDE,
        metadata: { title: 'Router guide', category: 'guide', url: 'https://example.com/router' },
      })
      .expect(201);
    guideId = guide.body.document_id as string;
    const pdf = await t.http
      .post(`/v1/datasets/${manuals}/documents`)
      .set(bearer(key))
      .attach('file', readFileSync(`${FIXTURES}/pdf/pdflatex-4-pages.pdf`), 'pdflatex-4-pages.pdf')
      .expect(201);
    pdfId = pdf.body.document_id as string;
    const open = await t.http
      .post(`/v1/datasets/${openData}/documents`)
      .set(bearer(key))
      .send({ content: 'Public transport timetables for the harbour ferry.', metadata: { category: 'open' } })
      .expect(201);
    const hidden = await t.http
      .post(`/v1/datasets/${elsewhere}/documents`)
      .set(bearer(otherKey))
      .send({ content: 'Globex secret router plans.' })
      .expect(201);
    await waitForDocument(t.http, key, manuals, guideId);
    await waitForDocument(t.http, key, manuals, pdfId);
    await waitForDocument(t.http, key, openData, open.body.document_id as string);
    await waitForDocument(t.http, otherKey, elsewhere, hidden.body.document_id as string);
  }, 120_000);
  afterAll(() => t.close());

  describe('with an API key', () => {
    let client: Client;
    beforeAll(async () => {
      client = await connect(`${t.url}/v1/mcp`, key.api_key);
    });
    afterAll(() => client.close());

    it('negotiates the latest protocol and lists its tools with schemas and hints', async () => {
      expect((client.transport as StreamableHTTPClientTransport).protocolVersion).toBe('2025-11-25');
      expect(client.getServerVersion()?.name).toBe('dataset-search');
      expect(client.getServerCapabilities()).toMatchObject({ tools: {}, resources: {}, prompts: {} });
      expect(client.getInstructions()).toContain('list_datasets');
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual([...READ_TOOLS, 'add_document', 'replace_document']);
      const search = tools.find((tool) => tool.name === 'search')!;
      expect(search.inputSchema.required).toEqual(['query']);
      // Anthropic's API refuses a tool whose input schema has a combinator at its root.
      for (const keyword of ['oneOf', 'anyOf', 'allOf'])
        expect(search.inputSchema).not.toHaveProperty(keyword);
      expect(Object.keys(search.inputSchema.properties ?? {})).toEqual(
        expect.arrayContaining(['dataset_id', 'dataset_ids']),
      );
      expect(search.outputSchema?.properties).toHaveProperty('results');
      expect(search.annotations?.readOnlyHint).toBe(true);
      expect(tools.find((tool) => tool.name === 'add_document')!.annotations?.readOnlyHint).toBe(false);
    });

    it('searches as the REST API does, with what an agent needs to cite each result', async () => {
      const { results } = structured<{ results: Result[]; query_time_ms: number }>(
        await client.callTool({
          name: 'search',
          arguments: { dataset_id: manuals, query: 'reset button antenna' },
        }),
      );
      const rest = await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: manuals, query: 'reset button antenna' })
        .expect(200);
      expect(results.map((r) => r.chunk_id)).toEqual(rest.body.results.map((r: Result) => r.chunk_id));
      expect(results[0]).toMatchObject({
        id: results[0].chunk_id,
        document_id: guideId,
        dataset_id: manuals,
        title: 'Router guide',
        filename: null,
        url: 'https://example.com/router',
        page: null,
        chunk_index: 0,
        char_start: 0,
        char_end: GUIDE.length,
        metadata: { category: 'guide' },
      });
      expect(results[0].content).toBe(GUIDE);
      // The REST result names the same source.
      const [source] = rest.body.results as Result[];
      for (const field of [
        'document_id',
        'title',
        'filename',
        'page',
        'chunk_index',
        'char_start',
        'char_end',
      ]) {
        expect([field, results[0][field as keyof Result]]).toEqual([field, source[field as keyof Result]]);
      }

      // min_score leaves out what scores below it; no result of a three-word query reaches 1.
      const strict = structured<{ results: Result[] }>(
        await client.callTool({
          name: 'search',
          arguments: { dataset_id: manuals, query: 'reset button antenna', min_score: results[0].score },
        }),
      );
      expect(strict.results.map((r) => r.chunk_id)).toContain(results[0].chunk_id);
      expect(strict.results.every((r) => r.score >= results[0].score)).toBe(true);
      const none = structured<{ results: Result[] }>(
        await client.callTool({
          name: 'search',
          arguments: { dataset_id: manuals, query: 'reset button antenna', min_score: 1 },
        }),
      );
      expect(none.results).toEqual([]);
    });

    it('cites the page of a PDF, and links a document without a url to its address in the API', async () => {
      const { results } = structured<{ results: Result[] }>(
        await client.callTool({
          name: 'search',
          arguments: { dataset_id: manuals, query: 'length of words should match the language', limit: 3 },
        }),
      );
      const hit = results.find((r) => r.document_id === pdfId)!;
      expect(hit).toMatchObject({ title: 'pdflatex-4-pages.pdf', filename: 'pdflatex-4-pages.pdf' });
      expect(hit.page).toBeGreaterThanOrEqual(1);
      expect(hit.page).toBeLessThanOrEqual(4);
      expect(hit.url).toBe(`${t.url}/v1/datasets/${manuals}/documents/${pdfId}`);
      expect(hit.char_end - hit.char_start).toBe(hit.content.length);
      // fetch at the result's offset reads the document's text from the passage on.
      const from = structured<Fetched>(
        await client.callTool({
          name: 'fetch',
          arguments: { id: pdfId, offset: hit.char_start, max_characters: hit.content.length },
        }),
      );
      expect(from.text).toBe(hit.content);
    });

    it('fetches a result with the passages around it, and a whole document a page at a time', async () => {
      const { results } = structured<{ results: Result[] }>(
        await client.callTool({
          name: 'search',
          arguments: { dataset_id: manuals, query: 'meaning', limit: 1 },
        }),
      );
      const passage = structured<Fetched>(
        await client.callTool({ name: 'fetch', arguments: { id: results[0].id } }),
      );
      expect(passage).toMatchObject({ id: results[0].id, document_id: pdfId, title: 'pdflatex-4-pages.pdf' });
      expect(passage.text).toContain(results[0].content);
      expect(passage.text.length).toBeGreaterThan(results[0].content.length);

      let text = '';
      let offset = 0;
      let pages = 0;
      for (;;) {
        const page = structured<Fetched>(
          await client.callTool({ name: 'fetch', arguments: { id: pdfId, offset, max_characters: 4000 } }),
        );
        expect(page.text.length).toBeLessThanOrEqual(4000);
        expect(page.offset).toBe(offset);
        text += page.text;
        pages++;
        if (page.next_offset === null) {
          expect(page.total_characters).toBeGreaterThan(12_000);
          break;
        }
        offset = page.next_offset;
      }
      expect(pages).toBeGreaterThanOrEqual(4);
      expect(text).toContain('Hello, here is some text without a meaning');
      // The pages join up: every chunk of the document is in the text, in order, once.
      const { rows } = await t.sql.query<{ content: string }>(
        'SELECT content FROM chunks WHERE document_id = $1 ORDER BY ordinal',
        [pdfId],
      );
      let at = 0;
      for (const { content } of rows) {
        const found = text.indexOf(content.slice(-40), at);
        expect(found).toBeGreaterThanOrEqual(at);
        at = found;
      }
    });

    it('runs a batch in query order and reports progress when asked', async () => {
      const progress: number[] = [];
      const answer = structured<{ results: { query: string; results: Result[] }[] }>(
        await client.callTool(
          {
            name: 'batch_search',
            arguments: { dataset_id: manuals, queries: ['warranty', 'antenna', 'meaning'] },
          },
          undefined,
          { onprogress: (p) => progress.push(p.progress) },
        ),
      );
      expect(answer.results.map((r) => r.query)).toEqual(['warranty', 'antenna', 'meaning']);
      expect(answer.results[0].results[0]).toMatchObject({
        title: 'Router guide',
        document_id: guideId,
        chunk_index: 0,
        char_start: 0,
        char_end: GUIDE.length,
        metadata: { category: 'guide' },
      });
      const meaning = answer.results[2].results.find((r) => r.document_id === pdfId)!;
      expect(meaning).toMatchObject({ filename: 'pdflatex-4-pages.pdf', page: expect.any(Number) });
      expect(progress).toEqual([1, 2, 3]);
    });

    it('lists datasets with their counts, and documents by status', async () => {
      const listed = structured<{
        datasets: { id: string; document_count: number; description: string | null }[];
      }>(await client.callTool({ name: 'list_datasets', arguments: { sort: 'name' } }));
      expect(listed.datasets.map((d) => d.id)).toEqual([manuals, openData]);
      expect(listed.datasets[0]).toMatchObject({ document_count: 2, description: 'How to use our products' });
      const documents = structured<{ documents: { document_id: string; title: string }[]; total: number }>(
        await client.callTool({
          name: 'list_documents',
          arguments: { dataset_id: manuals, status: 'ready' },
        }),
      );
      expect(documents.total).toBe(2);
      expect(documents.documents.map((d) => d.title).sort()).toEqual([
        'Router guide',
        'pdflatex-4-pages.pdf',
      ]);
      const failed = structured<{ total: number }>(
        await client.callTool({
          name: 'list_documents',
          arguments: { dataset_id: manuals, status: 'failed' },
        }),
      );
      expect(failed.total).toBe(0);
    });

    it('adds a document that search then finds', async () => {
      const added = structured<{ document_id: string; status: string; title: string }>(
        await client.callTool({
          name: 'add_document',
          arguments: {
            dataset_id: openData,
            content: 'The lighthouse opens at dawn.',
            metadata: { title: 'Lighthouse' },
          },
        }),
      );
      expect(added).toMatchObject({ status: 'processing', title: 'Lighthouse' });
      await waitForDocument(t.http, key, openData, added.document_id);
      const { results } = structured<{ results: Result[] }>(
        await client.callTool({ name: 'search', arguments: { dataset_id: openData, query: 'lighthouse' } }),
      );
      expect(results[0].document_id).toBe(added.document_id);
    });

    it('replaces a document’s text in place, keeping its id and its metadata', async () => {
      const added = structured<{ document_id: string }>(
        await client.callTool({
          name: 'add_document',
          arguments: {
            dataset_id: openData,
            content: 'The ferry leaves at noon.',
            metadata: { title: 'Ferry' },
          },
        }),
      );
      await waitForDocument(t.http, key, openData, added.document_id);
      const replaced = structured<{ document_id: string; status: string; title: string }>(
        await client.callTool({
          name: 'replace_document',
          arguments: {
            dataset_id: openData,
            document_id: added.document_id,
            content: 'The ferry leaves at nine.',
          },
        }),
      );
      expect(replaced).toMatchObject({
        document_id: added.document_id,
        status: 'processing',
        title: 'Ferry',
      });
      await waitForDocument(t.http, key, openData, added.document_id);
      const search = async (query: string) =>
        structured<{ results: Result[] }>(
          await client.callTool({ name: 'search', arguments: { dataset_id: openData, query } }),
        ).results.map((result) => result.document_id);
      expect(await search('nine')).toEqual([added.document_id]);
      expect(await search('noon')).toEqual([]);
      const missing = toolError(
        await client.callTool({
          name: 'replace_document',
          arguments: { dataset_id: openData, document_id: 'doc_nothere', content: 'x' },
        }),
      );
      expect(missing.code).toBe('document_not_found');
    });

    it("reports the contract's errors as tool errors an agent can act on", async () => {
      const missing = toolError(
        await client.callTool({ name: 'search', arguments: { dataset_id: 'ds_nothere', query: 'x' } }),
      );
      expect(missing.code).toBe('dataset_not_found');
      expect(
        toolError(
          await client.callTool({
            name: 'search',
            arguments: { dataset_id: manuals, query: 'x', filters: { year: { $near: 1 } } },
          }),
        ).code,
      ).toBe('invalid_filter');
      const unknown = toolError(
        await client.callTool({ name: 'search', arguments: { dataset_id: manuals, query: 'x', top_k: 3 } }),
      );
      expect(unknown).toMatchObject({ code: 'validation_error', details: { field: 'top_k' } });
      const above = toolError(
        await client.callTool({
          name: 'search',
          arguments: { dataset_id: manuals, query: 'x', min_score: 1.5 },
        }),
      );
      expect(above).toMatchObject({ code: 'validation_error', details: { field: 'min_score' } });
      expect(
        toolError(
          await client.callTool({
            name: 'search',
            arguments: { dataset_id: manuals, query: 'q'.repeat(1001) },
          }),
        ).code,
      ).toBe('query_too_long');
      for (const id of ['doc_nothere', `doc_${'A'.repeat(22)}`]) {
        expect(toolError(await client.callTool({ name: 'fetch', arguments: { id } })).code).toBe(
          'document_not_found',
        );
      }
      expect(
        toolError(await client.callTool({ name: 'fetch', arguments: { id: `chk_${'A'.repeat(22)}` } })).code,
      ).toBe('chunk_not_found');
      expect(toolError(await client.callTool({ name: 'fetch', arguments: { id: 'nonsense' } })).code).toBe(
        'validation_error',
      );
      await expect(client.callTool({ name: 'delete_everything', arguments: {} })).rejects.toThrow(
        /Unknown tool/,
      );
    });

    it('lists datasets as resources, reads one, and frames a question as a prompt', async () => {
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri).sort()).toEqual(
        [`dataset://${manuals}`, `dataset://${openData}`].sort(),
      );
      const read = await client.readResource({ uri: `dataset://${manuals}` });
      const body = JSON.parse((read.contents[0] as { text: string }).text);
      expect(body).toMatchObject({ id: manuals, name: 'Manuals', documents: { total: 2 } });
      await expect(client.readResource({ uri: `dataset://${elsewhere}` })).rejects.toThrow(
        /Resource not found/,
      );
      const { resourceTemplates } = await client.listResourceTemplates();
      expect(resourceTemplates[0].uriTemplate).toBe('dataset://{dataset_id}');

      const { prompts } = await client.listPrompts();
      expect(prompts.map((p) => p.name)).toEqual(['ask_dataset']);
      const prompt = await client.getPrompt({
        name: 'ask_dataset',
        arguments: { dataset_id: manuals, question: 'Does the warranty cover water?' },
      });
      const text = (prompt.messages[0].content as { text: string }).text;
      expect(text).toContain('"Manuals"');
      expect(text).toContain(`dataset_id "${manuals}"`);
      expect(text).toContain('Does the warranty cover water?');
      await expect(
        client.getPrompt({ name: 'ask_dataset', arguments: { dataset_id: elsewhere, question: 'x' } }),
      ).rejects.toThrow(/not found/);
    });

    it("never shows another account's private dataset", async () => {
      expect(
        toolError(
          await client.callTool({ name: 'search', arguments: { dataset_id: elsewhere, query: 'router' } }),
        ).code,
      ).toBe('dataset_not_found');
      const { rows } = await t.sql.query<{ id: string }>(
        'SELECT d.id FROM documents d WHERE d.dataset_id = $1',
        [elsewhere],
      );
      expect(toolError(await client.callTool({ name: 'fetch', arguments: { id: rows[0].id } })).code).toBe(
        'document_not_found',
      );
      await t.http
        .post(`/v1/mcp/datasets/${elsewhere}`)
        .set({ ...bearer(key), Accept: ACCEPT })
        .send(INITIALIZE)
        .expect(404)
        .expect((response) => expect(response.body.code).toBe('dataset_not_found'));
    });
  });

  describe('per-dataset endpoints', () => {
    it('serve a public dataset without credentials: the tools take no dataset_id, and nothing writes', async () => {
      const client = await connect(`${t.url}/v1/mcp/datasets/${openData}`);
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(READ_TOOLS);
      expect(tools[0].inputSchema.properties).not.toHaveProperty('dataset_id');
      const { results } = structured<{ results: Result[] }>(
        await client.callTool({ name: 'search', arguments: { query: 'ferry timetables' } }),
      );
      expect(results[0].dataset_id).toBe(openData);
      const listed = structured<{ datasets: { id: string }[] }>(
        await client.callTool({ name: 'list_datasets', arguments: {} }),
      );
      expect(listed.datasets.map((d) => d.id)).toEqual([openData]);
      expect(
        toolError(await client.callTool({ name: 'search', arguments: { query: 'x', dataset_id: manuals } }))
          .details,
      ).toMatchObject({ field: 'dataset_id' });
      // A document of another dataset is not this endpoint's to fetch.
      expect(toolError(await client.callTool({ name: 'fetch', arguments: { id: guideId } })).code).toBe(
        'document_not_found',
      );
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri)).toEqual([`dataset://${openData}`]);
      await client.close();
    });

    it("lists a failed document with why it failed, in list_documents and the dataset's resource", async () => {
      const upload = await t.http
        .post(`/v1/datasets/${elsewhere}/documents`)
        .set(bearer(otherKey))
        .attach('file', readFileSync(`${FIXTURES}/pdf/encrypted-password.pdf`), 'locked.pdf')
        .expect(201);
      const failedId = upload.body.document_id as string;
      const stored = await waitForDocument(t.http, otherKey, elsewhere, failedId);
      expect(stored.error?.code).toBe('invalid_pdf');
      const client = await connect(`${t.url}/v1/mcp/datasets/${elsewhere}`, otherKey.api_key);
      try {
        const listed = structured<{ documents: Record<string, unknown>[] }>(
          await client.callTool({ name: 'list_documents', arguments: { status: 'failed' } }),
        );
        expect(listed.documents).toEqual([
          expect.objectContaining({ document_id: failedId, title: 'locked.pdf', error: stored.error }),
        ]);
        const read = await client.readResource({ uri: `dataset://${elsewhere}` });
        const { documents } = JSON.parse((read.contents[0] as { text: string }).text) as {
          documents: { documents: Record<string, unknown>[] };
        };
        const failed = documents.documents.find((d) => d.document_id === failedId);
        expect(failed).toMatchObject({ status: 'failed', error: stored.error });
        expect(documents.documents.find((d) => d.document_id !== failedId)).not.toHaveProperty('error');
      } finally {
        await client.close();
      }
    });

    it('asks for credentials at a private dataset, and serves it to its owner', async () => {
      const refused = await post(t, `/v1/mcp/datasets/${manuals}`, INITIALIZE).expect(401);
      expect(refused.headers['www-authenticate']).toBe(
        `Bearer realm="dataset-search", scope="search datasets:read documents:read documents:write", ` +
          `resource_metadata="${t.url}/.well-known/oauth-protected-resource/v1/mcp"`,
      );
      const client = await connect(`${t.url}/v1/mcp/datasets/${manuals}`, key.api_key);
      const { results } = structured<{ results: Result[] }>(
        await client.callTool({ name: 'search', arguments: { query: 'warranty' } }),
      );
      expect(results[0].document_id).toBe(guideId);
      await client.close();
    });
  });

  describe('over HTTP', () => {
    it('challenges a request without credentials, naming its metadata and scopes', async () => {
      const response = await post(t, '/v1/mcp', INITIALIZE).expect(401);
      expect(response.headers['www-authenticate']).toBe(
        `Bearer realm="dataset-search", scope="search datasets:read documents:read documents:write", ` +
          `resource_metadata="${t.url}/.well-known/oauth-protected-resource/v1/mcp"`,
      );
      for (const path of [
        '/.well-known/oauth-protected-resource/v1/mcp',
        '/.well-known/oauth-protected-resource',
      ]) {
        const metadata = await t.http.get(path).expect(200);
        expect(metadata.body).toMatchObject({ resource: `${t.url}/v1/mcp`, authorization_servers: [t.url] });
      }
    });

    it("refuses a browser page of another origin, and serves the service's own", async () => {
      const evil = await post(t, '/v1/mcp', INITIALIZE, {
        ...bearer(key),
        Origin: 'http://evil.example.com',
      });
      expect(evil.status).toBe(403);
      expect(evil.body.error.data.code).toBe('origin_not_allowed');
      // DNS rebinding: a name of the attacker's that resolves here, as Host and Origin alike.
      const rebound = await post(t, `/v1/mcp/datasets/${openData}`, INITIALIZE, {
        Host: 'evil.example.com',
        Origin: 'http://evil.example.com',
      });
      expect(rebound.status).toBe(403);
      const own = await post(t, '/v1/mcp', INITIALIZE, { ...bearer(key), Origin: t.url }).expect(200);
      expect(own.headers['access-control-allow-origin']).toBe(t.url);
      const preflight = await t.http.options('/v1/mcp').set({ Origin: t.url }).expect(204);
      expect(preflight.headers['access-control-allow-headers']).toContain('Mcp-Protocol-Version');
    });

    it('answers a message it cannot read with a JSON-RPC error, and counts each request once', async () => {
      const malformed = await post(t, '/v1/mcp', '{"jsonrpc": "2.0", "id": 1, "method":', bearer(key)).expect(
        400,
      );
      expect(malformed.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
      const batch = await post(t, '/v1/mcp', [INITIALIZE, { ...INITIALIZE, id: 2 }], bearer(key)).expect(400);
      expect(batch.body.error.code).toBe(-32600);
      const notRpc = await post(t, '/v1/mcp', { hello: 'world' }, bearer(key)).expect(400);
      expect(notRpc.body.error.code).toBe(-32700);
      const before = Number(malformed.headers['x-ratelimit-remaining']);
      const ok = await post(t, '/v1/mcp', INITIALIZE, bearer(key)).expect(200);
      expect(ok.body.result.protocolVersion).toBe('2025-06-18');
      expect(ok.headers['mcp-session-id']).toBeUndefined();
      expect(Number(ok.headers['x-ratelimit-remaining'])).toBe(before - 3);
      await t.http.get('/v1/mcp').set(bearer(key)).expect(405).expect('Allow', 'POST');
      await t.http.delete('/v1/mcp').set(bearer(key)).expect(405);
    });

    it.each([
      [
        'arguments that are an array',
        'tools/call',
        { name: 'search', arguments: [1] },
        'params.arguments must be an object',
      ],
      [
        'arguments that are a string',
        'tools/call',
        { name: 'search', arguments: 'x' },
        'params.arguments must be an object',
      ],
      [
        'a tool name that is an object',
        'tools/call',
        { name: { a: 1 }, arguments: {} },
        'params.name must be a string',
      ],
      [
        'a prompt argument that is a number',
        'prompts/get',
        { name: 'ask_dataset', arguments: { question: 5 } },
        'params.arguments.question must be a string',
      ],
      ['a resource URI that is a number', 'resources/read', { uri: 7 }, 'params.uri must be a string'],
      [
        'U+0000 in an argument',
        'tools/call',
        { name: 'search', arguments: { query: 'a\u0000b' } },
        'params.arguments.query must not contain the character U+0000',
      ],
    ])(
      'answers -32602 Invalid params for %s, naming the parameter',
      async (_case, method, params, message) => {
        const response = await post(
          t,
          '/v1/mcp',
          { jsonrpc: '2.0', id: 9, method, params },
          bearer(key),
        ).expect(200);
        expect(response.body).toEqual({
          jsonrpc: '2.0',
          id: 9,
          error: { code: -32602, message: `Invalid params: ${message}` },
        });
      },
    );
  });

  describe('with OAuth, from nothing', () => {
    it.each([
      ['the general endpoint', () => `${t.url}/v1/mcp`],
      ['a per-dataset endpoint', () => `${t.url}/v1/mcp/datasets/${manuals}`],
    ])('discovers, registers, signs in, searches and refreshes at %s', async (_, endpoint) => {
      const url = new URL(endpoint());
      const provider = new TestClientProvider(new FormBrowser(t.url), member);
      const first = new Client({ name: 'agent', version: '1.0.0' });
      await expect(
        first.connect(new StreamableHTTPClientTransport(url, { authProvider: provider })),
      ).rejects.toThrow(UnauthorizedError);
      // The person signed in and consented; the client redeems the code it was sent back with.
      const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
      await transport.finishAuth(provider.returnedTo!.searchParams.get('code')!);
      // Asked for what the tools use; the member's role holds it all.
      expect(provider.saved?.scope?.split(' ').sort()).toEqual([
        'datasets:read',
        'documents:read',
        'documents:write',
        'search',
      ]);
      const client = new Client({ name: 'agent', version: '1.0.0' });
      await client.connect(transport);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('search');
      const args = url.pathname.endsWith('/mcp') ? { dataset_id: manuals } : {};
      const found = structured<{ results: Result[] }>(
        await client.callTool({ name: 'search', arguments: { ...args, query: 'warranty' } }),
      );
      expect(found.results[0].document_id).toBe(guideId);

      // The access token expires; the client refreshes it and goes on.
      const spent = provider.saved!.access_token;
      await t.sql.query(
        `UPDATE oauth_tokens SET expires_at = now() - interval '1 second' WHERE kind = 'access'`,
      );
      structured(await client.callTool({ name: 'search', arguments: { ...args, query: 'antenna' } }));
      expect(provider.saved!.access_token).not.toBe(spent);
      await client.close();
    });

    it('asks the person again when a tool needs a scope the token lacks (step-up)', async () => {
      const url = new URL(`${t.url}/v1/mcp`);
      // A token of an earlier consent, for reading only, held without a refresh token: a client that
      // holds one refreshes instead (the SDK's, 1.32), and a refresh never widens a grant.
      const registered = await registerClient(t);
      const narrow = await tokensFor(t, registered, member, {
        resource: `${t.url}/v1/mcp`,
        scope: 'search datasets:read documents:read',
      });
      const provider = new TestClientProvider(new FormBrowser(t.url), member);
      provider.information = registered;
      provider.saved = { access_token: narrow.access_token, token_type: 'Bearer', scope: narrow.scope };
      const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
      const client = new Client({ name: 'agent', version: '1' });
      await client.connect(transport);
      const add = {
        name: 'add_document',
        arguments: { dataset_id: openData, content: 'Written by an agent.' },
      };
      // 403 insufficient_scope: the client sends the person to consent to the scopes the challenge names.
      await expect(client.callTool(add)).rejects.toThrow(UnauthorizedError);
      await transport.finishAuth(provider.returnedTo!.searchParams.get('code')!);
      expect(provider.saved?.scope?.split(' ')).toContain('documents:write');
      expect(structured<{ status: string }>(await client.callTool(add)).status).toBe('processing');
      await client.close();
    });
  });

  describe('refuses over MCP what REST refuses', () => {
    let client: Awaited<ReturnType<typeof registerClient>>;
    beforeAll(async () => {
      client = await registerClient(t);
    });

    it('a token issued for the REST API, at either endpoint', async () => {
      const tokens = await tokensFor(t, client, member, { resource: `${t.url}/v1` });
      for (const path of ['/v1/mcp', `/v1/mcp/datasets/${openData}`]) {
        const response = await post(t, path, INITIALIZE, bearer(tokens.access_token)).expect(401);
        expect(response.body.code).toBe('invalid_token');
        expect(response.headers['www-authenticate']).toContain('error="invalid_token"');
      }
    });

    it('a write without credentials, at a public dataset’s endpoint', async () => {
      const call = {
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'add_document', arguments: { content: 'spam' } },
      };
      const response = await post(t, `/v1/mcp/datasets/${openData}`, call).expect(401);
      expect(response.headers['www-authenticate']).toContain('resource_metadata=');
    });

    it('a token without the search scope, and one without a tool’s scope', async () => {
      const readOnly = await tokensFor(t, client, member, {
        resource: `${t.url}/v1/mcp`,
        scope: 'datasets:read',
      });
      const refused = await post(t, '/v1/mcp', INITIALIZE, bearer(readOnly.access_token)).expect(403);
      expect(refused.body.code).toBe('insufficient_scope');
      expect(refused.headers['www-authenticate']).toContain(
        'error="insufficient_scope", scope="search datasets:read documents:read documents:write"',
      );

      // The challenge keeps what the token holds (datasets:write, which MCP clients are not asked for).
      const searchOnly = await tokensFor(t, client, member, {
        resource: `${t.url}/v1/mcp`,
        scope: 'search datasets:write',
      });
      const call = {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'list_datasets', arguments: {} },
      };
      const lacking = await post(t, '/v1/mcp', call, {
        ...bearer(searchOnly.access_token),
        'MCP-Protocol-Version': '2025-06-18',
      }).expect(403);
      expect(lacking.body.details).toEqual({ required_scope: 'datasets:read' });
      expect(lacking.headers['www-authenticate']).toContain(
        'scope="search datasets:read documents:read documents:write datasets:write"',
      );
    });

    it('a dataset outside the grant', async () => {
      const tokens = await tokensFor(t, client, member, {
        resource: `${t.url}/v1/mcp`,
        datasetIds: [openData],
      });
      const agent = await connect(`${t.url}/v1/mcp`, tokens.access_token);
      expect(
        toolError(
          await agent.callTool({ name: 'search', arguments: { dataset_id: manuals, query: 'warranty' } }),
        ).code,
      ).toBe('dataset_not_found');
      const listed = structured<{ datasets: { id: string }[] }>(
        await agent.callTool({ name: 'list_datasets', arguments: {} }),
      );
      expect(listed.datasets.map((d) => d.id)).toEqual([openData]);
      // Every other way into the dataset: its documents, one of its results, its resource, the prompt.
      const { rows } = await t.sql.query<{ id: string }>('SELECT id FROM chunks WHERE document_id = $1', [
        guideId,
      ]);
      const refusals = await Promise.all([
        agent.callTool({ name: 'list_documents', arguments: { dataset_id: manuals } }),
        agent.callTool({ name: 'fetch', arguments: { id: guideId } }),
        agent.callTool({ name: 'fetch', arguments: { id: rows[0].id } }),
      ]);
      expect(refusals.map((result) => toolError(result).code)).toEqual([
        'dataset_not_found',
        'document_not_found',
        'chunk_not_found',
      ]);
      await expect(agent.readResource({ uri: `dataset://${manuals}` })).rejects.toThrow(/Resource not found/);
      await expect(
        agent.getPrompt({ name: 'ask_dataset', arguments: { dataset_id: manuals, question: 'x' } }),
      ).rejects.toThrow(/not found/);
      const { resources } = await agent.listResources();
      expect(resources.map((r) => r.uri)).toEqual([`dataset://${openData}`]);
      await agent.close();
      await post(t, `/v1/mcp/datasets/${manuals}`, INITIALIZE, bearer(tokens.access_token)).expect(404);
    });
  });
});

describe('MCP endpoint rate limits', () => {
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_API_KEY: '6' });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
  });
  afterAll(() => t.close());

  it('answers a tool call past the budget with a tool error, and other messages with 429', async () => {
    const client = await connect(`${t.url}/v1/mcp`, key.api_key); // initialize and initialized: 2 of 6
    structured(await client.callTool({ name: 'search', arguments: { dataset_id: datasetId, query: 'x' } }));
    await client.listTools(); // 5 of 6 with the dataset's creation
    structured(await client.callTool({ name: 'search', arguments: { dataset_id: datasetId, query: 'x' } }));
    const spent = toolError(
      await client.callTool({ name: 'search', arguments: { dataset_id: datasetId, query: 'x' } }),
    );
    expect(spent.code).toBe('rate_limit_exceeded');
    expect(spent.retry_after).toBeGreaterThan(0);
    await expect(client.listTools()).rejects.toThrow(/rate_limit_exceeded/);
    await client.close();
  });
});

describe('MCP endpoint and a client that leaves', () => {
  let reranker: Server;
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;

  beforeAll(async () => {
    // A reranker that takes its time, so that the client can leave while a tool runs.
    reranker = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        const { documents } = JSON.parse(body) as { documents: string[] };
        const results = documents.map((_, index) => ({ index, relevance_score: 0.5 }));
        setTimeout(() => response.writeHead(200).end(JSON.stringify({ results })), 1_500);
      });
    });
    await new Promise<void>((resolve) => reranker.listen(0, '127.0.0.1', resolve));
    t = await startTestApp({
      RERANK_PROVIDER: 'http',
      RERANK_MODEL: 'rerank-english-v3.0',
      RERANK_BASE_URL: `http://127.0.0.1:${(reranker.address() as { port: number }).port}`,
      SHUTDOWN_GRACE_SECONDS: '15',
    });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    const added = await t.http
      .post(`/v1/datasets/${datasetId}/documents`)
      .set(bearer(key))
      .send({ content: 'The harbour ferry leaves at noon.' })
      .expect(201);
    await waitForDocument(t.http, key, datasetId, added.body.document_id as string);
  });
  afterAll(async () => {
    await t.close();
    reranker.close();
  });

  it('ends the request when the connection ends, rather than wait for ever for an answer to no one', async () => {
    const call = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'search', arguments: { dataset_id: datasetId, query: 'ferry', rerank: true } },
    });
    const request = httpRequest(`${t.url}/v1/mcp`, {
      method: 'POST',
      headers: { ...bearer(key), Accept: ACCEPT, 'Content-Type': 'application/json' },
    });
    request.on('error', () => undefined);
    request.end(call);
    await new Promise((resolve) => setTimeout(resolve, 300));
    request.destroy();
    // The tool's answer comes (the reranker answers at 1.5 s) and goes nowhere.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const started = Date.now();
    await t.terminate();
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(t.output()).not.toContain('requests still under way');
  });
});
