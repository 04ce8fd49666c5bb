import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { SEARCH_LIMITS } from 'src/modules/search/search.errors.js';
import { addDocument, createDataset } from './utils/documents.js';
import { invalidCases, ruleCases, type SchemaCase, validCases } from './utils/schema-cases.js';
import { startTestApp, type TestApp } from './utils/test-app.js';

const TOOLS = [
  'search',
  'batch_search',
  'list_datasets',
  'list_documents',
  'fetch',
  'evaluate',
  'add_document',
  'replace_document',
];

/**
 * The tools whose inputs the schema alone can make up. `evaluate` names judged documents by one of two
 * fields, of documents that must exist in the dataset, which no bound of a schema says: its refusals
 * are checked one by one in test/evaluation.e2e-spec.ts.
 */
const DERIVED = TOOLS.filter((name) => name !== 'evaluate');

/** The codes of a call refused for its arguments. */
const REFUSALS = [
  'validation_error',
  'invalid_filter',
  'invalid_metadata',
  'query_too_long',
  'too_many_queries',
  'content_too_large',
];

/** What a valid call may still meet: how the service is configured (no model, no reranker here). */
const SERVICE_STATES = ['semantic_unavailable', 'rerank_unavailable'];

/** The SDK client's own validator (draft-07), which tells what a schema declares valid. */
const validator = new AjvJsonSchemaValidator();

/** The error code of a tool's answer, or null when it answered with structured content. */
async function answer(client: Client, name: string, input: Record<string, unknown>): Promise<string | null> {
  const result = (await client.callTool({ name, arguments: input })) as CallToolResult;
  if (!result.isError) return null;
  return (JSON.parse((result.content[0] as { text: string }).text) as { code: string }).code;
}

/**
 * Each tool's advertised input schema against its validation, at both kinds of endpoint: every input
 * the schema declares valid is taken, every input it declares invalid is refused for its arguments.
 * The inputs are derived from the schema (test/utils/schema-cases.ts), so a bound, a choice or a
 * field changed on one side only fails here.
 */
describe('MCP tool schemas', () => {
  let t: TestApp;
  let apiKey: string;
  let datasetId: string;
  /** As many datasets as `dataset_ids` takes, `datasetId` first. */
  let datasetIds: string[];
  let documentId: string;
  /** The document replace_document replaces: not the one fetch reads, which must stay ready. */
  let replacedId: string;

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_API_KEY: '100000' });
    const key = await t.createApiKey('acme');
    datasetId = await createDataset(t.http, key, { name: 'Manuals' });
    const others = await Promise.all(
      Array.from({ length: SEARCH_LIMITS.datasets - 1 }, (_, i) =>
        createDataset(t.http, key, { name: `Part ${i}` }),
      ),
    );
    datasetIds = [datasetId, ...others];
    const document = await addDocument(t.http, key, datasetId, {
      content: 'Press the reset button for ten seconds to restore the router.',
    });
    documentId = document.document_id;
    replacedId = (await addDocument(t.http, key, datasetId, { content: 'Replaced, over and over.' }))
      .document_id;
    apiKey = key.api_key;
  });
  afterAll(() => t.close());

  describe.each([
    ['the general endpoint', () => '/v1/mcp'],
    ['a per-dataset endpoint', () => `/v1/mcp/datasets/${datasetId}`],
  ])('at %s', (_endpoint, path) => {
    let client: Client;
    let tools: Map<string, Tool>;

    beforeAll(async () => {
      client = new Client({ name: 'schema check', version: '1.0.0' });
      const headers = { Authorization: `Bearer ${apiKey}` };
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${t.url}${path()}`), { requestInit: { headers } }),
      );
      // Listed first, so that the client checks each answer against the tool's output schema too.
      tools = new Map((await client.listTools()).tools.map((tool) => [tool.name, tool]));
    });
    afterAll(() => client.close());

    it('lists every tool', () => {
      expect([...tools.keys()]).toEqual(TOOLS);
    });

    it.each(DERIVED)(
      '%s takes what its schema declares valid, and refuses what it declares invalid',
      async (name) => {
        const schema = tools.get(name)!.inputSchema;
        const known = {
          dataset_id: datasetId,
          dataset_ids: datasetIds,
          id: documentId,
          document_id: replacedId,
        };
        const accepts = validator.getValidator(schema);
        const mismatches: string[] = [];
        const check = async ({ name: what, input }: SchemaCase, valid: boolean) => {
          // The case is what a draft-07 validator reads in the schema, not only what this test does.
          expect([what, accepts(input).valid]).toEqual([what, valid]);
          const code = await answer(client, name, input);
          const taken = code === null || SERVICE_STATES.includes(code);
          const refused = code !== null && REFUSALS.includes(code);
          if (valid ? !taken : !refused) mismatches.push(`${what}: ${code ?? 'answered'}`);
        };
        // A search takes dataset_id or dataset_ids, exactly one, as their descriptions say.
        const properties = Object.keys(schema.properties ?? {});
        const exactlyOne = ['dataset_id', 'dataset_ids'].every((field) => properties.includes(field))
          ? ['dataset_id', 'dataset_ids']
          : undefined;
        const valids = validCases(schema, known, exactlyOne);
        const invalids = invalidCases(schema, known, exactlyOne);
        const beyondSchema = exactlyOne ? ruleCases(schema, known, exactlyOne) : [];
        if (exactlyOne) {
          // The alternative is tried both ways, and both and neither are refused.
          expect([...valids, ...invalids, ...beyondSchema].map((c) => c.name)).toEqual(
            expect.arrayContaining([
              'every argument at the high end (with dataset_ids)',
              'dataset_ids with an item repeated',
              'none of dataset_id, dataset_ids',
              'all of dataset_id, dataset_ids',
            ]),
          );
        }
        for (const valid of valids) await check(valid, true);
        for (const invalid of invalids) await check(invalid, false);
        for (const { name: what, input } of beyondSchema) {
          expect([what, accepts(input).valid]).toEqual([what, true]);
          const code = await answer(client, name, input);
          if (code === null || !REFUSALS.includes(code)) mismatches.push(`${what}: ${code ?? 'answered'}`);
        }
        expect(mismatches).toEqual([]);
      },
    );
  });
});
