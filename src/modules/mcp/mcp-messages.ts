import {
  CallToolRequestSchema,
  GetPromptRequestSchema,
  InitializeRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  ReadResourceRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { textIssueIn } from 'src/common/validation/json-value.js';
import type { Scope } from 'src/modules/auth/auth.types.js';
import { TOOL_SCOPES } from 'src/modules/mcp/tools/tool-registry.js';

/**
 * What the endpoint reads of a JSON-RPC message before the MCP server does: enough to ask for the
 * right credential, and to answer a spent budget, without trusting anything else in it.
 */
interface Message {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: { name?: unknown; _meta?: { progressToken?: unknown } };
}

function asMessage(value: unknown): Message | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : null;
}

/**
 * The scopes of the methods that read beyond search (each tool names its own, in `TOOLS`). A map: a
 * method is the caller's string, and `constructor` must not find Object's.
 */
const METHOD_SCOPES: ReadonlyMap<string, readonly Scope[]> = new Map([
  ['resources/list', ['datasets:read']],
  ['resources/read', ['datasets:read', 'documents:read']],
  ['prompts/get', ['datasets:read']],
]);

/**
 * The scopes a message needs besides the endpoint's own (`search`): a tool's, or a method's. They are
 * checked before the message runs, so that a token without one is answered 403 insufficient_scope
 * with a challenge naming it, from which an MCP client asks for it (step-up authorization).
 */
export function requiredScopes(value: unknown): readonly Scope[] {
  const message = asMessage(value);
  if (typeof message?.method !== 'string') return [];
  if (message.method === 'tools/call') {
    const scope = typeof message.params?.name === 'string' ? TOOL_SCOPES.get(message.params.name) : undefined;
    return scope ? [scope] : [];
  }
  return METHOD_SCOPES.get(message.method) ?? [];
}

/** A tools/call request, which is answered with a result even when it fails (`isError`). */
export function toolCallId(value: unknown): string | number | null {
  const message = asMessage(value);
  if (message?.method !== 'tools/call') return null;
  return typeof message.id === 'string' || typeof message.id === 'number' ? message.id : null;
}

/** The id of a request; undefined for a notification (or a message that has no usable id). */
export function requestId(value: unknown): string | number | undefined {
  const id = asMessage(value)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

/** Whether a request asks for progress notifications, which need a stream of server-sent events. */
export function asksForProgress(value: unknown): boolean {
  const token = asMessage(value)?.params?._meta?.progressToken;
  return typeof token === 'string' || typeof token === 'number';
}

/**
 * The requests the server answers (`McpService` registers a handler for each of the others; the SDK
 * answers `initialize` and `ping`), by method. The SDK checks a request against its schema only once
 * it has been dispatched, and answers a failure as an internal error (-32603) with zod's dump.
 */
const REQUEST_SCHEMAS = new Map(
  [
    InitializeRequestSchema,
    PingRequestSchema,
    ListToolsRequestSchema,
    CallToolRequestSchema,
    ListResourcesRequestSchema,
    ListResourceTemplatesRequestSchema,
    ReadResourceRequestSchema,
    ListPromptsRequestSchema,
    GetPromptRequestSchema,
  ].map((schema) => [schema.shape.method.value as string, schema]),
);

/** What a type is called in an error a person or an agent reads. */
const TYPE_NAMES: Record<string, string> = {
  record: 'an object',
  object: 'an object',
  string: 'a string',
  number: 'a number',
  boolean: 'a boolean',
  array: 'an array',
};

/**
 * Why a request's params are not what its method takes, in a line that names the parameter
 * (`params.arguments must be an object`), or null when they are, so that the endpoint answers -32602
 * Invalid params before the SDK sees them. Strings PostgreSQL could not store are refused here too,
 * as `AppValidationPipe` refuses them everywhere else.
 */
export function paramsIssue(value: unknown): string | null {
  const message = asMessage(value);
  if (typeof message?.method !== 'string') return null;
  const text = textIssueIn(message.params, 'params');
  if (text) return `${text.field} ${text.issue}`;
  const schema = REQUEST_SCHEMAS.get(message.method);
  const parsed = schema?.safeParse(message);
  if (!parsed || parsed.success) return null;
  const [issue] = parsed.error.issues;
  const path = issue.path.length > 0 ? issue.path.map(String).join('.') : 'params';
  const expected = issue.code === 'invalid_type' ? TYPE_NAMES[String(issue.expected)] : undefined;
  return expected ? `${path} must be ${expected}` : `${path}: ${issue.message}`;
}
