import { asksForProgress, requiredScopes, toolCallId } from 'src/modules/mcp/mcp-messages.js';

const call = (name: unknown, extra: object = {}) => ({
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params: { name, arguments: {}, ...extra },
});

describe('MCP messages', () => {
  it("names each tool's scope, and each method's beyond search", () => {
    expect(requiredScopes(call('search'))).toEqual(['search']);
    expect(requiredScopes(call('add_document'))).toEqual(['documents:write']);
    expect(requiredScopes(call('fetch'))).toEqual(['documents:read']);
    expect(requiredScopes({ jsonrpc: '2.0', id: 1, method: 'resources/read' })).toEqual([
      'datasets:read',
      'documents:read',
    ]);
    expect(requiredScopes({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).toEqual([]);
  });

  it('reads nothing into what it does not know: the MCP server answers it', () => {
    const inherited = ['constructor', 'toString', '__proto__', 'hasOwnProperty'].map((method) => ({
      method,
    }));
    for (const message of [
      call('nope'),
      call(42),
      call('constructor'),
      null,
      'text',
      [call('add_document')],
      { method: 5 },
      ...inherited,
    ]) {
      expect(requiredScopes(message)).toEqual([]);
    }
  });

  it('finds the id of a tool call, and whether it asks for progress', () => {
    expect(toolCallId(call('search'))).toBe(7);
    expect(toolCallId({ ...call('search'), id: { nested: true } })).toBeNull();
    expect(toolCallId({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).toBeNull();
    expect(asksForProgress(call('batch_search', { _meta: { progressToken: 'p1' } }))).toBe(true);
    expect(asksForProgress(call('batch_search'))).toBe(false);
  });
});
