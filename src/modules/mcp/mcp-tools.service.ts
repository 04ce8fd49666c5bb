import { type CallToolResult, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { AppError, CommonErrors } from 'src/common/errors/app-error.js';
import { reportedError } from 'src/common/filters/all-exceptions.filter.js';
import { isId } from 'src/common/ids/ids.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { listEnvelope } from 'src/common/pagination/pagination.js';
import { AppValidationPipe } from 'src/common/validation/validation.pipe.js';
import { isAuthenticated } from 'src/modules/auth/auth.types.js';
import { toDatasetResponse } from 'src/modules/datasets/dto/dataset.dto.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import type { DocumentEntity } from 'src/modules/documents/document.entity.js';
import { DocumentErrors } from 'src/modules/documents/documents.errors.js';
import { DocumentsService } from 'src/modules/documents/documents.service.js';
import { textFrom } from 'src/modules/chunk-index/document-text.js';
import { PassagesRepository } from 'src/modules/chunk-index/passages.repository.js';
import { DocumentsRepository } from 'src/modules/documents/documents.repository.js';
import {
  AddDocumentToolDto,
  BatchSearchToolDto,
  FetchToolDto,
  ListDatasetsToolDto,
  ListDocumentsToolDto,
  SearchToolDto,
} from 'src/modules/mcp/dto/tools.dto.js';
import {
  accountOf,
  documentListItem,
  documentSummary,
  type McpContext,
  titleOf,
  urlOf,
} from 'src/modules/mcp/mcp-context.js';
import { McpErrors } from 'src/modules/mcp/mcp.errors.js';
import { type ToolDefinition, type ToolName, TOOLS } from 'src/modules/mcp/tool-definitions.js';
import type { SearchResultDto } from 'src/modules/search/dto/search.dto.js';
import { SearchService } from 'src/modules/search/search.service.js';

/** What a tool hears of its call besides its arguments: how to report progress. */
export interface ToolCall {
  progress?: (done: number, total: number, message: string) => void;
}

type Structured = Record<string, unknown>;

const validation = new AppValidationPipe();

/**
 * The tools. They call the services the REST routes call, with the request's caller, so they see,
 * refuse and count exactly what the REST API does; what REST does not read (the passages around a
 * result, documents' text) comes from `PassagesRepository`, once the caller is known to see the document.
 */
@Injectable()
export class McpToolsService {
  constructor(
    private readonly search: SearchService,
    private readonly datasets: DatasetsService,
    private readonly documents: DocumentsService,
    private readonly passages: PassagesRepository,
    private readonly documentRows: DocumentsRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** The tools a caller is offered: writing needs credentials, which an anonymous caller lacks. */
  list(context: McpContext): readonly ToolDefinition[] {
    return isAuthenticated(context.caller) ? TOOLS : TOOLS.filter((tool) => tool.anonymous);
  }

  /**
   * A tool's answer: its result as structured content (and as JSON text, for clients that read only
   * text), or the contract's error as a tool error (`isError`) that an agent can read and act on.
   * Only an unknown tool is a protocol error.
   */
  async call(
    context: McpContext,
    name: string,
    args: Record<string, unknown>,
    call: ToolCall,
  ): Promise<CallToolResult> {
    const tool = this.list(context).find((candidate) => candidate.name === name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    try {
      const structured = await this.run(tool.name, context, args, call);
      return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
    } catch (exception) {
      return toolError(reportedError(exception, context.request, this.logger));
    }
  }

  private run(name: ToolName, context: McpContext, args: Record<string, unknown>, call: ToolCall) {
    switch (name) {
      case 'search':
        return this.searchTool(context, args);
      case 'batch_search':
        return this.batchSearchTool(context, args, call);
      case 'list_datasets':
        return this.listDatasetsTool(context, args);
      case 'list_documents':
        return this.listDocumentsTool(context, args);
      case 'fetch':
        return this.fetchTool(context, args);
      case 'add_document':
        return this.addDocumentTool(context, args);
    }
  }

  private async searchTool(context: McpContext, args: Record<string, unknown>): Promise<Structured> {
    const started = performance.now();
    const request = await this.validated(SearchToolDto, args, context);
    const results = await this.search.query(context.caller, { ...request, explain: false });
    return {
      results: results.map((result) => cited(context, request.dataset_id, result)),
      query_time_ms: Math.round(performance.now() - started),
    };
  }

  private async batchSearchTool(
    context: McpContext,
    args: Record<string, unknown>,
    call: ToolCall,
  ): Promise<Structured> {
    const started = performance.now();
    const request = await this.validated(BatchSearchToolDto, args, context);
    const total = request.queries.length;
    const answers = await this.search.batch(context.caller, { ...request, explain: false }, (done) =>
      call.progress?.(done, total, `${done} of ${total} queries answered`),
    );
    return {
      results: answers.map(({ query, results }) => ({
        query,
        results: results.map((result) => cited(context, request.dataset_id, result)),
      })),
      query_time_ms: Math.round(performance.now() - started),
    };
  }

  private async listDatasetsTool(context: McpContext, args: Record<string, unknown>): Promise<Structured> {
    if (context.dataset) {
      refuseArguments(args);
      return {
        datasets: [toDatasetResponse(context.dataset)],
        total: 1,
        limit: 1,
        offset: 0,
        has_more: false,
      };
    }
    const query = await this.validated(ListDatasetsToolDto, args, context, { takesDataset: false });
    const page = await this.datasets.list(accountOf(context.caller), query);
    return listEnvelope('datasets', { items: page.items.map(toDatasetResponse), total: page.total }, query);
  }

  private async listDocumentsTool(context: McpContext, args: Record<string, unknown>): Promise<Structured> {
    const query = await this.validated(ListDocumentsToolDto, args, context);
    const page = await this.documents.list(context.caller, query.dataset_id, query);
    return listEnvelope('documents', { items: page.items.map(documentListItem), total: page.total }, query);
  }

  private async addDocumentTool(context: McpContext, args: Record<string, unknown>): Promise<Structured> {
    const input = await this.validated(AddDocumentToolDto, args, context);
    const upload = this.documents.textUpload(input.content, input.metadata);
    const document = await this.documents.upload(accountOf(context.caller), input.dataset_id, upload);
    return documentSummary(document);
  }

  /**
   * `fetch`, in the shape ChatGPT's connectors and deep-research clients read (`id`, `title`,
   * `text`, `url`, `metadata`): a document's text a page at a time, or a search result with the
   * passages before and after it.
   */
  private async fetchTool(context: McpContext, args: Record<string, unknown>): Promise<Structured> {
    const { id, offset, max_characters } = await this.validated(FetchToolDto, args, context, {
      takesDataset: false,
    });
    // By its prefix, as a REST route takes any id of its kind: one that is malformed is merely missing.
    if (id.startsWith('chk_')) return this.fetchPassage(context, id);
    if (!id.startsWith('doc_')) throw McpErrors.notAnId();
    const document = await this.visibleDocument(context, id);
    const [stretch, total] = await Promise.all([
      this.passages.text(id, offset, max_characters),
      this.passages.textLength(id),
    ]);
    return {
      id,
      ...this.describe(context, document),
      text: stretch.text,
      page: null,
      offset,
      next_offset: stretch.truncated ? stretch.end : null,
      total_characters: total,
    };
  }

  private async fetchPassage(context: McpContext, chunkId: string): Promise<Structured> {
    const owner = isId('chk', chunkId) ? await this.passages.chunkOwner(chunkId) : null;
    if (!owner) throw McpErrors.chunkNotFound(chunkId);
    const document = await this.visibleDocument(context, owner.documentId).catch((error: unknown) => {
      throw error instanceof AppError && error.code === 'document_not_found'
        ? McpErrors.chunkNotFound(chunkId)
        : error;
    });
    const [chunks, total] = await Promise.all([
      this.passages.neighbourhood(owner.documentId, owner.ordinal, 1),
      this.passages.textLength(owner.documentId),
    ]);
    const from = chunks[0]?.charStart ?? 0;
    const stretch = textFrom(chunks, from, Number.MAX_SAFE_INTEGER);
    return {
      id: chunkId,
      ...this.describe(context, document),
      text: stretch.text,
      page: chunks.find((chunk) => chunk.id === chunkId)?.page ?? null,
      offset: from,
      next_offset: stretch.end < total ? stretch.end : null,
      total_characters: total,
    };
  }

  /**
   * A document the caller may read, found by its id alone (in the endpoint's dataset, on a
   * per-dataset endpoint). One in a dataset the caller cannot see looks missing, as over REST.
   */
  private async visibleDocument(context: McpContext, documentId: string): Promise<DocumentEntity> {
    const datasetId = isId('doc', documentId) ? await this.documentRows.datasetIdOf(documentId) : null;
    if (datasetId === null || (context.dataset !== null && context.dataset.id !== datasetId)) {
      throw DocumentErrors.notFound(documentId);
    }
    return this.documents.get(context.caller, datasetId, documentId).catch((error: unknown) => {
      throw error instanceof AppError && error.code === 'dataset_not_found'
        ? DocumentErrors.notFound(documentId)
        : error;
    });
  }

  private describe(context: McpContext, document: DocumentEntity) {
    return {
      title: titleOf(document.metadata, document.filename, document.id),
      url: urlOf(context.base, document.metadata, document.datasetId, document.id),
      metadata: document.metadata,
      document_id: document.id,
      dataset_id: document.datasetId,
      filename: document.filename,
      status: document.status,
    };
  }

  /**
   * A tool's arguments validated as the REST route validates its body. On a per-dataset endpoint the
   * URL names the dataset, and an argument naming one is refused rather than ignored.
   */
  private async validated<T extends object>(
    dto: new () => T,
    args: Record<string, unknown>,
    context: McpContext,
    { takesDataset = true }: { takesDataset?: boolean } = {},
  ): Promise<T> {
    let body = args;
    if (takesDataset && context.dataset) {
      if ('dataset_id' in args) throw McpErrors.datasetFixed();
      body = { ...args, dataset_id: context.dataset.id };
    }
    return (await validation.transform(body, { type: 'body', metatype: dto })) as T;
  }
}

/**
 * A search result with what an agent needs to cite it: its document, title and link, and its place
 * there, all read by the search itself; `id` is the chunk's, which `fetch` takes.
 */
function cited(context: McpContext, datasetId: string, result: SearchResultDto): Structured {
  const metadata = result.metadata ?? {};
  return {
    id: result.chunk_id,
    chunk_id: result.chunk_id,
    document_id: result.document_id,
    dataset_id: datasetId,
    title: titleOf(metadata, result.filename, result.document_id),
    filename: result.filename,
    url: urlOf(context.base, metadata, datasetId, result.document_id),
    page: result.page,
    chunk_index: result.chunk_index,
    char_start: result.char_start,
    char_end: result.char_end,
    score: result.score,
    content: result.content,
    metadata,
  };
}

/** The contract's error as a tool result: the same body the REST API answers, as text. */
export function toolError(error: AppError): CallToolResult {
  const body: Structured = { error: error.message, code: error.code };
  if (error.details !== undefined) body.details = error.details;
  if (error.status === 429) body.retry_after = Number(error.headers?.['Retry-After'] ?? 1);
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}

/** The tools that take no arguments refuse any, as every tool refuses an unknown one. */
function refuseArguments(args: Record<string, unknown>): void {
  const unknown = Object.keys(args);
  if (unknown.length > 0) {
    throw CommonErrors.validation(unknown.map((field) => ({ field, issue: 'is not a known field' })));
  }
}
