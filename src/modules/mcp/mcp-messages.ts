import type { Scope } from 'src/modules/auth/auth.types.js';
import { TOOL_SCOPES } from 'src/modules/mcp/tool-definitions.js';

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

/** Whether a request asks for progress notifications, which need a stream of server-sent events. */
export function asksForProgress(value: unknown): boolean {
  const token = asMessage(value)?.params?._meta?.progressToken;
  return typeof token === 'string' || typeof token === 'number';
}
