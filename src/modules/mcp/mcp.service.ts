import { Inject, Injectable } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  GetPromptRequestSchema,
  type GetPromptResult,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  type ListResourcesResult,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type Prompt,
  ReadResourceRequestSchema,
  type ReadResourceResult,
  type Resource,
} from '@modelcontextprotocol/sdk/types.js';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { AppError, CommonErrors } from 'src/common/errors/app-error.js';
import { reportedError } from 'src/common/filters/all-exceptions.filter.js';
import { isId } from 'src/common/ids/ids.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { listEnvelope } from 'src/common/pagination/pagination.js';
import { AppValidationPipe } from 'src/common/validation/validation.pipe.js';
import { isAuthenticated, type Principal } from 'src/modules/auth/auth.types.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { toDatasetResponse } from 'src/modules/datasets/datasets.controller.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import type { DocumentEntity } from 'src/modules/documents/document.entity.js';
import { toDocumentSummary } from 'src/modules/documents/documents.controller.js';
import { DocumentErrors } from 'src/modules/documents/documents.errors.js';
import { DocumentsService } from 'src/modules/documents/documents.service.js';
import { textFrom, type TextStretch } from 'src/modules/mcp/document-text.js';
import {
  AddDocumentToolDto,
  BatchSearchToolDto,
  FetchToolDto,
  ListDatasetsToolDto,
  ListDocumentsToolDto,
  SearchToolDto,
} from 'src/modules/mcp/dto/tools.dto.js';
import { asMcpError, McpErrors, RESOURCE_NOT_FOUND } from 'src/modules/mcp/mcp.errors.js';
import { McpRepository, type PlacedChunk } from 'src/modules/mcp/mcp.repository.js';
import { type ToolDefinition, type ToolName, TOOLS } from 'src/modules/mcp/mcp.tools.js';
import type { SearchResultDto } from 'src/modules/search/dto/search.dto.js';
import { SearchService } from 'src/modules/search/search.service.js';

/** What one request to an MCP endpoint is served with. */
export interface McpContext {
  caller: Principal;
  /** The dataset of a per-dataset endpoint; null at the general endpoint. */
  dataset: DatasetEntity | null;
  /** Where the service is reached, for the links in results. */
  base: string;
  request: Request;
}

/** What a tool hears of its call besides its arguments: how to report progress. */
interface ToolCall {
  progress?: (done: number, total: number, message: string) => void;
}

type Structured = Record<string, unknown>;

export const ASK_DATASET = 'ask_dataset';
const DATASET_URI = /^dataset:\/\/([^/?#]+)$/;
/** Datasets per page of `resources/list`, and documents a dataset resource lists. */
const RESOURCE_PAGE = 100;

const validation = new AppValidationPipe();

/**
 * The MCP server of one request. The endpoint is stateless (no `Mcp-Session-Id`): each POST gets a
 * server and a transport of its own, built from the request's caller and endpoint, so that any API
 * process serves any request. The tools call the services the REST routes call, with the same caller,
 * so they see, refuse and count exactly what the REST API does.
 */
@Injectable()
export class McpService {
  constructor(
    private readonly search: SearchService,
    private readonly datasets: DatasetsService,
    private readonly documents: DocumentsService,
    private readonly repository: McpRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Answers one JSON-RPC message: as JSON, or as a stream of server-sent events when a tool call asks
   * for progress (`progress`).
   */
  async serve(
    context: McpContext,
    response: Response,
    message: unknown,
    { progress }: { progress: boolean },
  ): Promise<void> {
    const server = this.server(context);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: !progress,
    });
    response.on('close', () => void server.close());
    await server.connect(transport);
    await transport.handleRequest(context.request, response, message);
  }

  private server(context: McpContext): Server {
    const server = new Server(
      { name: 'dataset-search', title: 'Dataset search', version: '1.0.0' },
      {
        capabilities: { tools: {}, resources: {}, prompts: {} },
        instructions: instructions(context.dataset),
      },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: this.tools(context).map((tool) => ({
        name: tool.name,
        ...tool.describe(context.dataset !== null),
      })),
    }));
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      const token = request.params._meta?.progressToken;
      const call: ToolCall =
        token === undefined
          ? {}
          : {
              progress: (progress, total, message) =>
                void extra
                  .sendNotification({
                    method: 'notifications/progress',
                    params: { progressToken: token, progress, total, message },
                  })
                  .catch(() => undefined), // the client may have gone; the answer still stands
            };
      return this.callTool(context, request.params.name, request.params.arguments ?? {}, call);
    });
    server.setRequestHandler(ListResourcesRequestSchema, (request) =>
      this.guarded(context, () => this.listResources(context, request.params?.cursor)),
    );
    server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
      resourceTemplates: context.dataset
        ? []
        : [
            {
              uriTemplate: 'dataset://{dataset_id}',
              name: 'dataset',
              title: 'A dataset',
              description: 'A dataset: its description and its documents',
              mimeType: 'application/json',
            },
          ],
    }));
    server.setRequestHandler(ReadResourceRequestSchema, (request) =>
      this.guarded(context, () => this.readResource(context, request.params.uri)),
    );
    server.setRequestHandler(ListPromptsRequestSchema, () => ({
      prompts: [askDatasetPrompt(context.dataset)],
    }));
    server.setRequestHandler(GetPromptRequestSchema, (request) =>
      this.guarded(context, () =>
        this.getPrompt(context, request.params.name, request.params.arguments ?? {}),
      ),
    );
    return server;
  }

  /** The tools a caller is offered: writing needs credentials, which an anonymous caller lacks. */
  private tools(context: McpContext): readonly ToolDefinition[] {
    return isAuthenticated(context.caller) ? TOOLS : TOOLS.filter((tool) => tool.anonymous);
  }

  /**
   * A tool's answer: its result as structured content (and as JSON text, for clients that read only
   * text), or the contract's error as a tool error (`isError`) that an agent can read and act on.
   * Only an unknown tool is a protocol error.
   */
  private async callTool(
    context: McpContext,
    name: string,
    args: Record<string, unknown>,
    call: ToolCall,
  ): Promise<CallToolResult> {
    const tool = this.tools(context).find((candidate) => candidate.name === name);
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
    const [shown] = await this.placed(context, [results]);
    return { results: shown, query_time_ms: Math.round(performance.now() - started) };
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
    const shown = await this.placed(
      context,
      answers.map((answer) => answer.results),
    );
    return {
      results: answers.map((answer, i) => ({ query: answer.query, results: shown[i] })),
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
    return listEnvelope('documents', { items: page.items.map(documentSummary), total: page.total }, query);
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
      this.readText(id, offset, max_characters),
      this.repository.textLength(id),
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
    const owner = isId('chk', chunkId) ? await this.repository.chunkOwner(chunkId) : null;
    if (!owner) throw McpErrors.chunkNotFound(chunkId);
    const document = await this.visibleDocument(context, owner.documentId).catch((error: unknown) => {
      throw error instanceof AppError && error.code === 'document_not_found'
        ? McpErrors.chunkNotFound(chunkId)
        : error;
    });
    const [chunks, total] = await Promise.all([
      this.repository.neighbourhood(owner.documentId, owner.ordinal, 1),
      this.repository.textLength(owner.documentId),
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

  /** Up to `maxCharacters` of a document's text from `from`, reading only the chunks it needs. */
  private async readText(documentId: string, from: number, maxCharacters: number): Promise<TextStretch> {
    const chunks: PlacedChunk[] = [];
    for await (const batch of this.repository.chunksFrom(documentId, from)) {
      chunks.push(...batch);
      const stretch = textFrom(chunks, from, maxCharacters);
      if (stretch.truncated) return stretch;
    }
    return textFrom(chunks, from, maxCharacters);
  }

  /**
   * A document the caller may read, found by its id alone (in the endpoint's dataset, on a
   * per-dataset endpoint). One in a dataset the caller cannot see looks missing, as over REST.
   */
  private async visibleDocument(context: McpContext, documentId: string): Promise<DocumentEntity> {
    const datasetId = isId('doc', documentId) ? await this.repository.datasetOf(documentId) : null;
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
   * Search results with what an agent needs to cite them: each chunk's document, title, link and
   * place, read for all the lists in one statement. A chunk deleted since it was found is left out.
   */
  private async placed(context: McpContext, lists: SearchResultDto[][]): Promise<Structured[][]> {
    const places = await this.repository.chunkPlaces(lists.flat().map((result) => result.chunk_id));
    return lists.map((results) =>
      results.flatMap((result) => {
        const place = places.get(result.chunk_id);
        if (!place) return [];
        const metadata = result.metadata ?? {};
        return [
          {
            id: result.chunk_id,
            chunk_id: result.chunk_id,
            document_id: place.documentId,
            dataset_id: place.datasetId,
            title: titleOf(metadata, place.filename, place.documentId),
            filename: place.filename,
            url: urlOf(context.base, metadata, place.datasetId, place.documentId),
            page: place.page,
            chunk_index: place.ordinal,
            score: result.score,
            content: result.content,
            metadata,
          },
        ];
      }),
    );
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

  /** Datasets as resources: the caller's (a page at a time), or the endpoint's own. */
  private async listResources(context: McpContext, cursor: string | undefined): Promise<ListResourcesResult> {
    if (context.dataset) return { resources: [datasetResource(context.dataset)] };
    // The cursor is the offset of the next page, as this method wrote it.
    const offset = cursor === undefined ? 0 : /^\d{1,9}$/.test(cursor) ? Number(cursor) : -1;
    if (offset < 0) throw new McpError(ErrorCode.InvalidParams, 'Invalid cursor');
    const query = { limit: RESOURCE_PAGE, offset, sort: '-created_at' as const };
    const page = await this.datasets.list(accountOf(context.caller), query);
    const next = offset + page.items.length;
    return {
      resources: page.items.map(datasetResource),
      ...(next < page.total ? { nextCursor: String(next) } : {}),
    };
  }

  /** A dataset resource: the dataset as the REST API shows it, with its first documents. */
  private async readResource(context: McpContext, uri: string): Promise<ReadResourceResult> {
    const match = DATASET_URI.exec(uri);
    const datasetId = match ? decodeURIComponent(match[1]) : null;
    const notFound = () => new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri });
    if (datasetId === null || (context.dataset !== null && context.dataset.id !== datasetId))
      throw notFound();
    const dataset =
      context.dataset ??
      (await this.datasets.get(context.caller, datasetId).catch((error: unknown) => {
        throw error instanceof AppError && error.code === 'dataset_not_found' ? notFound() : error;
      }));
    const query = { limit: RESOURCE_PAGE, offset: 0 };
    const documents = await this.documents.list(context.caller, dataset.id, query);
    const text = JSON.stringify({
      ...toDatasetResponse(dataset),
      documents: listEnvelope(
        'documents',
        { items: documents.items.map(documentSummary), total: documents.total },
        query,
      ),
    });
    return { contents: [{ uri, mimeType: 'application/json', text }] };
  }

  private async getPrompt(
    context: McpContext,
    name: string,
    args: Record<string, string>,
  ): Promise<GetPromptResult> {
    if (name !== ASK_DATASET) throw new McpError(ErrorCode.InvalidParams, `Unknown prompt: ${name}`);
    const question = args.question?.trim();
    if (!question) throw new McpError(ErrorCode.InvalidParams, 'The argument question is required');
    let dataset = context.dataset;
    if (!dataset) {
      if (!args.dataset_id)
        throw new McpError(ErrorCode.InvalidParams, 'The argument dataset_id is required');
      dataset = await this.datasets.get(context.caller, args.dataset_id);
    }
    const where = context.dataset ? '' : ` with dataset_id "${dataset.id}"`;
    const text =
      `Answer the question below from the documents of the dataset "${dataset.name}"` +
      `${dataset.description ? ` (${dataset.description})` : ''}. Use the search tool${where}: several searches if ` +
      'the question has several parts, or rephrased if the first finds little. Read more around a promising result ' +
      'with fetch. Cite the title of each document you rely on. If the documents do not answer the question, say so ' +
      `rather than answer from elsewhere.\n\nQuestion: ${question}`;
    return {
      description: `A question about the dataset "${dataset.name}"`,
      messages: [{ role: 'user', content: { type: 'text', text } }],
    };
  }

  /**
   * Runs a handler whose errors become JSON-RPC errors with the contract's code, and never with the
   * text of an unexpected error (the SDK would send any error's message as it is).
   */
  private async guarded<T>(context: McpContext, handler: () => Promise<T>): Promise<T> {
    try {
      return await handler();
    } catch (exception) {
      if (exception instanceof McpError) throw exception;
      throw asMcpError(reportedError(exception, context.request, this.logger));
    }
  }
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

/** The general endpoint needs an account's credential (its route says so); this makes it explicit. */
function accountOf(caller: Principal) {
  if (!isAuthenticated(caller)) throw CommonErrors.authenticationRequired();
  return caller;
}

/** A document's title: its metadata's `title`, else its filename, else its id. */
export function titleOf(
  metadata: Record<string, unknown>,
  filename: string | null,
  documentId: string,
): string {
  const title = metadata.title;
  if (typeof title === 'string' && title.trim() !== '') return title;
  return filename ?? documentId;
}

/** Where a document is: its metadata's `url` when it is a web address, else its address in this API. */
export function urlOf(
  base: string,
  metadata: Record<string, unknown>,
  datasetId: string,
  documentId: string,
): string {
  const url = metadata.url;
  if (typeof url === 'string' && /^https?:\/\/\S+$/i.test(url)) return url;
  return `${base}/v1/datasets/${datasetId}/documents/${documentId}`;
}

function documentSummary(document: DocumentEntity) {
  return {
    ...toDocumentSummary(document),
    title: titleOf(document.metadata, document.filename, document.id),
  };
}

function datasetResource(dataset: DatasetEntity): Resource {
  return {
    uri: `dataset://${dataset.id}`,
    name: dataset.name,
    title: dataset.name,
    ...(dataset.description ? { description: dataset.description } : {}),
    mimeType: 'application/json',
  };
}

function askDatasetPrompt(fixed: DatasetEntity | null): Prompt {
  return {
    name: ASK_DATASET,
    title: 'Ask a dataset',
    description: `Answer a question from the documents of ${fixed ? `the dataset "${fixed.name}"` : 'a dataset'}, citing them`,
    arguments: [
      ...(fixed ? [] : [{ name: 'dataset_id', description: 'The dataset (ds_...)', required: true }]),
      { name: 'question', description: 'The question to answer', required: true },
    ],
  };
}

function instructions(fixed: DatasetEntity | null): string {
  const scope = fixed
    ? `This server searches one dataset, "${fixed.name}"${fixed.description ? `: ${fixed.description}` : ''}.`
    : 'This server searches datasets of documents. Find the dataset with list_datasets first.';
  return (
    `${scope} search finds the passages that best match a question, with their document's title and page; ` +
    'fetch reads a result with the text around it, or a whole document a page at a time. Tool errors carry a ' +
    'code (dataset_not_found, invalid_filter, rate_limit_exceeded with retry_after in seconds, ...).'
  );
}
