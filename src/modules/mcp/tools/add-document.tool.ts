import { AddDocumentToolDto } from 'src/modules/mcp/dto/tool-arguments.dto.js';
import { toAddedDocument, ToolDocumentDto } from 'src/modules/mcp/dto/tool-results.dto.js';
import { accountOf } from 'src/modules/mcp/mcp-context.js';
import { defineTool } from 'src/modules/mcp/tools/tool.js';

export const addDocumentTool = defineTool({
  name: 'add_document',
  title: 'Add a document',
  description: (fixed) =>
    `Adds text to ${fixed ? 'this dataset' : 'a dataset'}, to be chunked, embedded and indexed in the background ` +
    '(usually seconds); list_documents shows when it is ready. Needs write access.',
  scope: 'documents:write',
  anonymous: false,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  input: AddDocumentToolDto,
  output: ToolDocumentDto,
  async run({ input, context, services }) {
    const upload = services.documents.textUpload(input.content, input.metadata);
    return toAddedDocument(
      await services.documents.upload(accountOf(context.caller), input.dataset_id, upload),
    );
  },
});
