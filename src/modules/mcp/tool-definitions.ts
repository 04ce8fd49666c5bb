import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Scope } from 'src/modules/auth/auth.types.js';
import { DATASET_SORTS } from 'src/modules/datasets/dto/dataset.dto.js';
import { DOCUMENT_STATUSES } from 'src/modules/documents/dto/document.dto.js';
import { FETCH_LIMITS } from 'src/modules/mcp/dto/tools.dto.js';
import { SEARCH_MODES } from 'src/modules/search/dto/search.dto.js';
import { SEARCH_LIMITS } from 'src/modules/search/search.errors.js';
import { PAGE_SIZE } from 'src/common/pagination/pagination.js';

/**
 * The tools' JSON Schemas, written in the part of JSON Schema that draft-07 and 2020-12 (MCP's
 * default dialect) read alike: no `$schema`, no `$defs`, so that any client's validator takes them.
 */
type Schema = Record<string, unknown>;

export type ToolName =
  'search' | 'batch_search' | 'list_datasets' | 'list_documents' | 'fetch' | 'add_document';

/** A tool as the endpoint lists it, and the scope a call needs. */
export interface ToolDefinition {
  name: ToolName;
  scope: Scope;
  /** Whether it takes `dataset_id`: on a per-dataset endpoint that is fixed, and not an argument. */
  takesDataset: boolean;
  /** Offered to callers without credentials (on a public dataset's endpoint). */
  anonymous: boolean;
  describe(fixed: boolean): Omit<Tool, 'name'>;
}

const object = (properties: Record<string, Schema>, required: string[] = []): Schema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

/** An object whose keys are free: metadata, filters. */
const FREE_OBJECT: Schema = { type: 'object', additionalProperties: true };
const NULLABLE_STRING: Schema = { type: ['string', 'null'] };

const DATASET_ID: Schema = {
  type: 'string',
  description: 'The dataset: its id (ds_...), as list_datasets gives it',
};

const PAGING = {
  limit: {
    type: 'integer',
    minimum: 1,
    maximum: PAGE_SIZE.max,
    default: PAGE_SIZE.default,
    description: 'Items per page',
  },
  offset: { type: 'integer', minimum: 0, default: 0, description: 'Items to skip' },
};

const SEARCH_OPTIONS = {
  limit: {
    type: 'integer',
    minimum: 1,
    maximum: SEARCH_LIMITS.results.max,
    default: SEARCH_LIMITS.results.default,
    description: 'Results to return',
  },
  filters: {
    ...FREE_OBJECT,
    description:
      `Metadata filters, at most ${SEARCH_LIMITS.filterFields} fields: {"category": "guide"} is equality (an array field matches ` +
      'when it contains the value); a dotted name reaches into nested metadata; operators $eq $ne $gt $gte $lt $lte $in $nin ' +
      '$exists; combine with $and / $or.',
  },
  mode: {
    type: 'string',
    enum: SEARCH_MODES,
    default: 'hybrid',
    description:
      'hybrid (meaning and keywords, best for most questions), semantic, or keyword (exact terms, codes, names)',
  },
  rerank: {
    type: 'boolean',
    default: false,
    description: 'Rerank the best candidates with a cross-encoder: better order, 100-300 ms slower',
  },
  min_score: {
    type: 'number',
    minimum: 0,
    maximum: 1,
    default: 0,
    description:
      'Leave out results scoring below this: 0.5 keeps moderate and better matches, so no result means no good answer',
  },
};

const QUERY: Schema = {
  type: 'string',
  minLength: 1,
  maxLength: SEARCH_LIMITS.queryCharacters,
  description: 'What to look for: a question or keywords',
};

/** One search result: the chunk found, the document it comes from, and where in it. */
const RESULT: Schema = object(
  {
    id: { type: 'string', description: 'The chunk id; fetch it to read it with the text around it' },
    chunk_id: { type: 'string' },
    document_id: {
      type: 'string',
      description: 'The document the passage comes from; fetch it to read it all',
    },
    dataset_id: { type: 'string' },
    title: { type: 'string', description: "The document's metadata title, else its filename, else its id" },
    filename: { ...NULLABLE_STRING, description: "The document's file name; null for text sent as such" },
    url: { type: 'string', description: "The document's metadata url, else its address in this API" },
    page: {
      type: ['integer', 'null'],
      description: 'Page (PDF) or slide (PPTX), 1 first; null for other formats',
    },
    chunk_index: { type: 'integer', description: "The passage's place in its document, 0 first" },
    char_start: {
      type: 'integer',
      description: "Where the passage starts in the document's text: fetch the document with this offset",
    },
    char_end: { type: 'integer', description: 'Where the passage ends in the same text (exclusive)' },
    score: {
      type: 'number',
      minimum: 0,
      maximum: 1,
      description:
        'How well it answers the query: 0.9+ excellent, 0.7-0.9 good, 0.5-0.7 moderate, below 0.5 weak',
    },
    content: { type: 'string' },
    metadata: FREE_OBJECT,
  },
  [
    'id',
    'chunk_id',
    'document_id',
    'dataset_id',
    'title',
    'filename',
    'url',
    'page',
    'chunk_index',
    'char_start',
    'char_end',
    'score',
    'content',
    'metadata',
  ],
);

const DATASET: Schema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    description: NULLABLE_STRING,
    is_public: { type: 'boolean' },
    document_count: { type: 'integer' },
    language: { type: 'string' },
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
    metadata: FREE_OBJECT,
  },
  required: ['id', 'name', 'description', 'is_public', 'document_count', 'created_at', 'metadata'],
};

const DOCUMENT: Schema = {
  type: 'object',
  properties: {
    document_id: { type: 'string' },
    dataset_id: { type: 'string' },
    title: { type: 'string' },
    filename: { type: 'string' },
    size_bytes: { type: 'integer' },
    status: { type: 'string', enum: DOCUMENT_STATUSES },
    chunks_created: { type: 'integer' },
    created_at: { type: 'string' },
    metadata: FREE_OBJECT,
    progress: {
      type: 'object',
      properties: { stage: { type: 'string' }, percent: { type: 'integer' } },
      description: 'While processing: the stage under way and how far it is',
    },
    error: {
      type: 'object',
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: FREE_OBJECT },
      description: 'When failed: why, with a code',
    },
  },
  required: ['document_id', 'dataset_id', 'title', 'status', 'created_at', 'metadata'],
};

const ENVELOPE = {
  total: { type: 'integer' },
  limit: { type: 'integer' },
  offset: { type: 'integer' },
  has_more: { type: 'boolean' },
};

/** The input schema of a tool: `dataset_id` first and required, unless the endpoint fixes it. */
function input(
  fixed: boolean,
  properties: Record<string, Schema>,
  required: string[],
  takesDataset = true,
): Schema {
  return takesDataset && !fixed
    ? object({ dataset_id: DATASET_ID, ...properties }, ['dataset_id', ...required])
    : object(properties, required);
}

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

export const TOOLS: readonly ToolDefinition[] = [
  {
    name: 'search',
    scope: 'search',
    takesDataset: true,
    anonymous: true,
    describe: (fixed) => ({
      title: 'Search documents',
      description:
        `Hybrid search (meaning and keywords) over the documents of ${fixed ? 'this dataset' : 'a dataset'}. ` +
        'Returns the best passages, each with its source to cite (document title, page, place in the document) and ' +
        'a relevance score (0.9+ excellent, 0.7-0.9 good, below 0.5 weak). Fetch a result by its id to read the text ' +
        'around it.',
      inputSchema: input(fixed, { query: QUERY, ...SEARCH_OPTIONS }, ['query']) as Tool['inputSchema'],
      outputSchema: object(
        { results: { type: 'array', items: RESULT }, query_time_ms: { type: 'integer' } },
        ['results', 'query_time_ms'],
      ) as Tool['outputSchema'],
      annotations: { title: 'Search documents', ...READ_ONLY },
    }),
  },
  {
    name: 'batch_search',
    scope: 'search',
    takesDataset: true,
    anonymous: true,
    describe: (fixed) => ({
      title: 'Search with several queries',
      description:
        `Up to ${SEARCH_LIMITS.batchQueries} searches of ${fixed ? 'this dataset' : 'one dataset'} at once, run in parallel: ` +
        'for a question with several parts. Results come in the order of the queries. Reports progress when asked.',
      inputSchema: input(
        fixed,
        {
          queries: {
            type: 'array',
            items: QUERY,
            minItems: 1,
            maxItems: SEARCH_LIMITS.batchQueries,
            description: 'The queries',
          },
          ...SEARCH_OPTIONS,
          limit: { ...SEARCH_OPTIONS.limit, description: 'Results per query' },
        },
        ['queries'],
      ) as Tool['inputSchema'],
      outputSchema: object(
        {
          results: {
            type: 'array',
            items: object({ query: { type: 'string' }, results: { type: 'array', items: RESULT } }, [
              'query',
              'results',
            ]),
          },
          query_time_ms: { type: 'integer' },
        },
        ['results', 'query_time_ms'],
      ) as Tool['outputSchema'],
      annotations: { title: 'Search with several queries', ...READ_ONLY },
    }),
  },
  {
    name: 'list_datasets',
    scope: 'datasets:read',
    takesDataset: false,
    anonymous: true,
    describe: (fixed) => ({
      title: 'List datasets',
      description: fixed
        ? 'The dataset this endpoint searches: its name, description and document count.'
        : 'The datasets you can search, newest first, with their descriptions and document counts.',
      inputSchema: (fixed
        ? object({})
        : object({
            ...PAGING,
            sort: {
              type: 'string',
              enum: DATASET_SORTS,
              default: '-created_at',
              description: 'A leading "-" sorts descending',
            },
          })) as Tool['inputSchema'],
      outputSchema: object({ datasets: { type: 'array', items: DATASET }, ...ENVELOPE }, [
        'datasets',
        'total',
        'limit',
        'offset',
        'has_more',
      ]) as Tool['outputSchema'],
      annotations: { title: 'List datasets', ...READ_ONLY },
    }),
  },
  {
    name: 'list_documents',
    scope: 'documents:read',
    takesDataset: true,
    anonymous: true,
    describe: (fixed) => ({
      title: 'List documents',
      description:
        `The documents of ${fixed ? 'this dataset' : 'a dataset'}, newest first, with their processing status: ` +
        'the progress of those processing, and the error of those that failed.',
      inputSchema: input(
        fixed,
        {
          status: { type: 'string', enum: DOCUMENT_STATUSES, description: 'Only documents in this state' },
          ...PAGING,
        },
        [],
      ) as Tool['inputSchema'],
      outputSchema: object({ documents: { type: 'array', items: DOCUMENT }, ...ENVELOPE }, [
        'documents',
        'total',
        'limit',
        'offset',
        'has_more',
      ]) as Tool['outputSchema'],
      annotations: { title: 'List documents', ...READ_ONLY },
    }),
  },
  {
    name: 'fetch',
    scope: 'documents:read',
    takesDataset: false,
    anonymous: true,
    describe: () => ({
      title: 'Read a document',
      description:
        "A document's text by its id (doc_...), a page at a time: pass next_offset as offset for the next page. " +
        'Given a search result id (chk_...), that passage with the ones before and after it.',
      inputSchema: object(
        {
          id: {
            type: 'string',
            minLength: 1,
            description: 'A document id (doc_...) or a search result id (chk_...)',
          },
          offset: {
            type: 'integer',
            minimum: 0,
            default: 0,
            description: "Where to start in the document's text",
          },
          max_characters: {
            type: 'integer',
            minimum: 1,
            maximum: FETCH_LIMITS.maxCharacters,
            default: FETCH_LIMITS.defaultCharacters,
            description: 'The longest text to return',
          },
        },
        ['id'],
      ) as Tool['inputSchema'],
      outputSchema: object(
        {
          id: { type: 'string' },
          title: { type: 'string' },
          text: { type: 'string' },
          url: { type: 'string' },
          metadata: FREE_OBJECT,
          document_id: { type: 'string' },
          dataset_id: { type: 'string' },
          filename: NULLABLE_STRING,
          status: { type: 'string', enum: DOCUMENT_STATUSES },
          page: { type: ['integer', 'null'], description: "The passage's page or slide (results only)" },
          offset: { type: 'integer', description: "Where the text starts in the document's text" },
          next_offset: {
            type: ['integer', 'null'],
            description: 'Where the next page starts; null at the end',
          },
          total_characters: { type: 'integer' },
        },
        [
          'id',
          'title',
          'text',
          'url',
          'metadata',
          'document_id',
          'dataset_id',
          'status',
          'offset',
          'next_offset',
          'total_characters',
        ],
      ) as Tool['outputSchema'],
      annotations: { title: 'Read a document', ...READ_ONLY },
    }),
  },
  {
    name: 'add_document',
    scope: 'documents:write',
    takesDataset: true,
    anonymous: false,
    describe: (fixed) => ({
      title: 'Add a document',
      description:
        `Adds text to ${fixed ? 'this dataset' : 'a dataset'}, to be chunked, embedded and indexed in the background ` +
        '(usually seconds); list_documents shows when it is ready. Needs write access.',
      inputSchema: input(
        fixed,
        {
          content: {
            type: 'string',
            maxLength: 1_000_000,
            description: 'The text, up to 1,000,000 characters',
          },
          metadata: {
            ...FREE_OBJECT,
            description: 'Metadata: title, category and tags are conventional; all of it can be filtered on',
          },
        },
        ['content'],
      ) as Tool['inputSchema'],
      outputSchema: object(DOCUMENT.properties as Record<string, Schema>, [
        'document_id',
        'dataset_id',
        'status',
        'created_at',
        'metadata',
      ]) as Tool['outputSchema'],
      annotations: {
        title: 'Add a document',
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: false,
      },
    }),
  },
];

export const TOOL_SCOPES: ReadonlyMap<string, Scope> = new Map(TOOLS.map((tool) => [tool.name, tool.scope]));
