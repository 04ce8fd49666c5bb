import type { Scope } from 'src/modules/auth/auth.types.js';
import { addDocumentTool } from 'src/modules/mcp/tools/add-document.tool.js';
import { batchSearchTool } from 'src/modules/mcp/tools/batch-search.tool.js';
import { evaluateTool } from 'src/modules/mcp/tools/evaluate.tool.js';
import { fetchTool } from 'src/modules/mcp/tools/fetch.tool.js';
import { listDatasetsTool } from 'src/modules/mcp/tools/list-datasets.tool.js';
import { listDocumentsTool } from 'src/modules/mcp/tools/list-documents.tool.js';
import { replaceDocumentTool } from 'src/modules/mcp/tools/replace-document.tool.js';
import { searchTool } from 'src/modules/mcp/tools/search.tool.js';
import type { ToolDefinition } from 'src/modules/mcp/tools/tool.js';

/** Every tool, in the order the endpoints list them. */
export const TOOLS: readonly ToolDefinition[] = [
  searchTool,
  batchSearchTool,
  listDatasetsTool,
  listDocumentsTool,
  fetchTool,
  evaluateTool,
  addDocumentTool,
  replaceDocumentTool,
];

/** A map: a tool's name is the caller's string, and `constructor` must not find Object's. */
export const TOOL_SCOPES: ReadonlyMap<string, Scope> = new Map(TOOLS.map((tool) => [tool.name, tool.scope]));
