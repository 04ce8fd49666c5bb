import { BatchSearchToolDto } from 'src/modules/mcp/dto/tool-arguments.dto.js';
import { BatchSearchToolResultDto, toCitedResult } from 'src/modules/mcp/dto/tool-results.dto.js';
import { defineTool, READ_ONLY } from 'src/modules/mcp/tools/tool.js';
import { SEARCH_LIMITS } from 'src/modules/search/search.errors.js';

export const batchSearchTool = defineTool({
  name: 'batch_search',
  title: 'Search with several queries',
  description: (fixed) =>
    `Up to ${SEARCH_LIMITS.batchQueries} searches of ${fixed ? 'this dataset' : 'a dataset (or several: dataset_ids)'} at once, run in parallel: ` +
    'for a question with several parts. Results come in the order of the queries. Reports progress when asked.',
  scope: 'search',
  anonymous: true,
  annotations: READ_ONLY,
  input: BatchSearchToolDto,
  output: BatchSearchToolResultDto,
  async run({ input, context, services, call }) {
    const started = performance.now();
    const total = input.queries.length;
    const answers = await services.search.batch(context.caller, { ...input, explain: false }, (done) =>
      call.progress?.(done, total, `${done} of ${total} queries answered`),
    );
    return {
      results: answers.map(({ query, results }) => ({
        query,
        results: results.map((result) => toCitedResult(result, input.dataset_id, context.base)),
      })),
      query_time_ms: Math.round(performance.now() - started),
    };
  },
});
