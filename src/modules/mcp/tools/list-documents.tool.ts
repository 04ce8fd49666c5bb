import { listEnvelope } from 'src/common/pagination/pagination.js';
import { ListDocumentsToolDto } from 'src/modules/mcp/dto/tool-arguments.dto.js';
import { ToolDocumentListDto, toToolDocument } from 'src/modules/mcp/dto/tool-results.dto.js';
import { defineTool, READ_ONLY } from 'src/modules/mcp/tools/tool.js';

export const listDocumentsTool = defineTool({
  name: 'list_documents',
  title: 'List documents',
  description: (fixed) =>
    `The documents of ${fixed ? 'this dataset' : 'a dataset'}, newest first, with their processing status: ` +
    'the progress of those processing, and the error of those that failed.',
  scope: 'documents:read',
  anonymous: true,
  annotations: READ_ONLY,
  input: ListDocumentsToolDto,
  output: ToolDocumentListDto,
  async run({ input, context, services }) {
    const page = await services.documents.list(context.caller, input.dataset_id, input);
    return listEnvelope('documents', { items: page.items.map(toToolDocument), total: page.total }, input);
  },
});
