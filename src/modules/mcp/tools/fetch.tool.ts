import { AppError } from 'src/common/errors/app-error.js';
import { isId } from 'src/common/ids/ids.js';
import { textFrom } from 'src/modules/chunk-index/document-text.js';
import type { DocumentEntity } from 'src/modules/documents/document.entity.js';
import { DocumentErrors } from 'src/modules/documents/documents.errors.js';
import { FetchToolDto } from 'src/modules/mcp/dto/tool-arguments.dto.js';
import { fetchedDocument, FetchResultDto } from 'src/modules/mcp/dto/tool-results.dto.js';
import type { McpContext } from 'src/modules/mcp/mcp-context.js';
import { McpErrors } from 'src/modules/mcp/mcp.errors.js';
import { defineTool, READ_ONLY, type ToolServices } from 'src/modules/mcp/tools/tool.js';

/**
 * `fetch`, in the shape ChatGPT's connectors and deep-research clients read: a document's text a
 * page at a time, or a search result with the passages before and after it.
 */
export const fetchTool = defineTool({
  name: 'fetch',
  title: 'Read a document',
  description: () =>
    "A document's text by its id (doc_...), a page at a time: pass next_offset as offset for the next page. " +
    'Given a search result id (chk_...), that passage with the ones before and after it.',
  scope: 'documents:read',
  anonymous: true,
  annotations: READ_ONLY,
  input: FetchToolDto,
  output: FetchResultDto,
  async run({ input, context, services }) {
    const { id, offset, max_characters } = input;
    // By its prefix, as a REST route takes any id of its kind: one that is malformed is merely missing.
    if (id.startsWith('chk_')) return fetchPassage(services, context, id);
    if (!id.startsWith('doc_')) throw McpErrors.notAnId();
    return fetchDocument(services, context, id, offset, max_characters);
  },
});

async function fetchDocument(
  services: ToolServices,
  context: McpContext,
  id: string,
  offset: number,
  maxCharacters: number,
): Promise<FetchResultDto> {
  const document = await visibleDocument(services, context, id);
  const [stretch, total] = await Promise.all([
    services.passages.text(id, offset, maxCharacters),
    services.passages.textLength(id),
  ]);
  return {
    id,
    ...fetchedDocument(document, context.base),
    text: stretch.text,
    page: null,
    offset,
    next_offset: stretch.truncated ? stretch.end : null,
    total_characters: total,
  };
}

async function fetchPassage(
  services: ToolServices,
  context: McpContext,
  chunkId: string,
): Promise<FetchResultDto> {
  const owner = isId('chk', chunkId) ? await services.passages.chunkOwner(chunkId) : null;
  if (!owner) throw McpErrors.chunkNotFound(chunkId);
  const document = await visibleDocument(services, context, owner.documentId).catch((error: unknown) => {
    throw error instanceof AppError && error.code === 'document_not_found'
      ? McpErrors.chunkNotFound(chunkId)
      : error;
  });
  const [chunks, total] = await Promise.all([
    services.passages.neighbourhood(owner.documentId, owner.ordinal, 1),
    services.passages.textLength(owner.documentId),
  ]);
  const from = chunks[0]?.charStart ?? 0;
  const stretch = textFrom(chunks, from, Number.MAX_SAFE_INTEGER);
  return {
    id: chunkId,
    ...fetchedDocument(document, context.base),
    text: stretch.text,
    page: chunks.find((chunk) => chunk.id === chunkId)?.page ?? null,
    offset: from,
    next_offset: stretch.end < total ? stretch.end : null,
    total_characters: total,
  };
}

/**
 * A document the caller may read, found by its id alone (in the endpoint's dataset, at a
 * per-dataset endpoint). One in a dataset the caller cannot see looks missing, as over REST.
 */
async function visibleDocument(
  services: ToolServices,
  context: McpContext,
  documentId: string,
): Promise<DocumentEntity> {
  const datasetId = isId('doc', documentId) ? await services.documentRows.datasetIdOf(documentId) : null;
  if (datasetId === null || (context.dataset !== null && context.dataset.id !== datasetId)) {
    throw DocumentErrors.notFound(documentId);
  }
  return services.documents.get(context.caller, datasetId, documentId).catch((error: unknown) => {
    throw error instanceof AppError && error.code === 'dataset_not_found'
      ? DocumentErrors.notFound(documentId)
      : error;
  });
}
