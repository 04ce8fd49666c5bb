import { SearchToolDto } from 'src/modules/mcp/dto/tool-arguments.dto.js';
import { SearchToolResultDto, toCitedResult } from 'src/modules/mcp/dto/tool-results.dto.js';
import { defineTool, READ_ONLY } from 'src/modules/mcp/tools/tool.js';

export const searchTool = defineTool({
  name: 'search',
  title: 'Search documents',
  description: (fixed) =>
    `Hybrid search (meaning and keywords) over the documents of ${fixed ? 'this dataset' : 'a dataset, or of several at once (dataset_ids)'}. ` +
    'Returns the best passages, each with its source to cite (document title, page, place in the document) and ' +
    'a relevance score (0.9+ excellent, 0.7-0.9 good, below 0.5 weak). Fetch a result by its id to read the text ' +
    'around it.',
  scope: 'search',
  anonymous: true,
  annotations: READ_ONLY,
  input: SearchToolDto,
  output: SearchToolResultDto,
  async run({ input, context, services }) {
    const started = performance.now();
    const results = await services.search.query(context.caller, { ...input, explain: false });
    return {
      results: results.map((result) => toCitedResult(result, input.dataset_id, context.base)),
      query_time_ms: Math.round(performance.now() - started),
    };
  },
});
