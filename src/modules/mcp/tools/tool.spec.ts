import type { McpContext } from 'src/modules/mcp/mcp-context.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { AppError } from 'src/common/errors/app-error.js';
import { batchSearchTool } from 'src/modules/mcp/tools/batch-search.tool.js';
import { searchTool } from 'src/modules/mcp/tools/search.tool.js';
import { type ToolDefinition, toolArguments, toolListing } from 'src/modules/mcp/tools/tool.js';

const general = { dataset: null } as McpContext;
const atDataset = { dataset: { id: 'ds_fixed' } as DatasetEntity } as McpContext;

/** The contract's code and details of a refused call. */
async function refusal(promise: Promise<unknown>): Promise<unknown> {
  const error: unknown = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AppError);
  return { code: (error as AppError).code, details: (error as AppError).details };
}

describe.each<[string, ToolDefinition, Record<string, unknown>]>([
  ['search', searchTool, { query: 'tides' }],
  ['batch_search', batchSearchTool, { queries: ['tides'] }],
])('%s and its datasets', (_name, tool, asked) => {
  it('lists dataset_id or dataset_ids at the general endpoint, and neither at a dataset’s', () => {
    const listed = toolListing(tool, false).inputSchema;
    expect(listed).not.toHaveProperty('oneOf');
    expect(listed.properties).toHaveProperty('dataset_id');
    expect(listed.properties?.dataset_ids).toMatchObject({ minItems: 1, maxItems: 20, uniqueItems: true });
    const fixed = toolListing(tool, true).inputSchema;
    expect(fixed.properties).not.toHaveProperty('dataset_id');
    expect(fixed.properties).not.toHaveProperty('dataset_ids');
    expect(fixed).not.toHaveProperty('oneOf');
  });

  it('takes either at the general endpoint, and refuses neither, or a repeated one, as REST does', async () => {
    await expect(
      toolArguments(tool, { ...asked, dataset_ids: ['ds_a', 'ds_b'] }, general),
    ).resolves.toMatchObject({ dataset_ids: ['ds_a', 'ds_b'] });
    await expect(toolArguments(tool, { ...asked, dataset_id: 'ds_a' }, general)).resolves.toMatchObject({
      dataset_id: 'ds_a',
    });
    // Both given is refused by the search itself (`datasetsOf`), for REST and the tools alike.
    expect(await refusal(toolArguments(tool, { ...asked }, general))).toMatchObject({
      code: 'validation_error',
      details: { field: 'dataset_id', issue: 'is required' },
    });
    expect(
      await refusal(toolArguments(tool, { ...asked, dataset_ids: ['ds_a', 'ds_a'] }, general)),
    ).toMatchObject({ code: 'validation_error', details: { field: 'dataset_ids' } });
  });

  it('refuses dataset_ids at a per-dataset endpoint, as it refuses dataset_id', async () => {
    for (const field of ['dataset_id', 'dataset_ids'] as const) {
      const value = field === 'dataset_id' ? 'ds_other' : ['ds_other'];
      expect(await refusal(toolArguments(tool, { ...asked, [field]: value }, atDataset))).toEqual({
        code: 'validation_error',
        details: { field, issue: 'is set by this endpoint: its URL names the dataset' },
      });
    }
    await expect(toolArguments(tool, { ...asked }, atDataset)).resolves.toMatchObject({
      dataset_id: 'ds_fixed',
    });
  });
});
