import { listEnvelope } from 'src/common/pagination/pagination.js';
import { DatasetListResponseDto, toDatasetResponse } from 'src/modules/datasets/dto/dataset.dto.js';
import { ListDatasetsToolDto } from 'src/modules/mcp/dto/tool-arguments.dto.js';
import { accountOf } from 'src/modules/mcp/mcp-context.js';
import { defineTool, READ_ONLY } from 'src/modules/mcp/tools/tool.js';

export const listDatasetsTool = defineTool({
  name: 'list_datasets',
  title: 'List datasets',
  description: (fixed) =>
    fixed
      ? 'The dataset this endpoint searches: its name, description and document count.'
      : 'The datasets you can search, newest first, with their descriptions and document counts.',
  scope: 'datasets:read',
  anonymous: true,
  annotations: READ_ONLY,
  input: ListDatasetsToolDto,
  // A per-dataset endpoint lists its own dataset, which no argument changes.
  atDatasetEndpoint: 'no-arguments',
  output: DatasetListResponseDto,
  async run({ input, context, services }) {
    if (context.dataset) {
      return {
        datasets: [toDatasetResponse(context.dataset)],
        total: 1,
        limit: 1,
        offset: 0,
        has_more: false,
      };
    }
    const page = await services.datasets.list(accountOf(context.caller), input);
    return listEnvelope(
      'datasets',
      { items: page.items.map((dataset) => toDatasetResponse(dataset)), total: page.total },
      input,
    );
  },
});
