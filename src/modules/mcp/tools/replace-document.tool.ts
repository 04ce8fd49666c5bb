import { ReplaceDocumentToolDto } from 'src/modules/mcp/dto/tool-arguments.dto.js';
import { toAddedDocument, ToolDocumentDto } from 'src/modules/mcp/dto/tool-results.dto.js';
import { accountOf } from 'src/modules/mcp/mcp-context.js';
import { defineTool } from 'src/modules/mcp/tools/tool.js';

/** The REST PUT of a document's text: the same checks, the same new run, the same events. */
export const replaceDocumentTool = defineTool({
  name: 'replace_document',
  title: "Replace a document's text",
  description: (fixed) =>
    `Replaces the text of a document of ${fixed ? 'this dataset' : 'a dataset'}, keeping its document_id, and processes it ` +
    'again in the background; searches find the previous text until the new one is indexed. metadata, when given, ' +
    'replaces the metadata whole; left out, it stays. Needs write access.',
  scope: 'documents:write',
  anonymous: false,
  // Each call starts a run and sends a document.updated event, even for the same text.
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  input: ReplaceDocumentToolDto,
  output: ToolDocumentDto,
  async run({ input, context, services }) {
    const upload = services.documents.textUpload(input.content, input.metadata);
    return toAddedDocument(
      await services.documents.replace(
        accountOf(context.caller),
        input.dataset_id,
        input.document_id,
        upload,
        {
          keepMetadata: input.metadata === undefined,
        },
      ),
    );
  },
});
