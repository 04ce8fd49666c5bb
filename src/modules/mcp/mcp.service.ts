import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
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
import { Inject, Injectable } from '@nestjs/common';
import type { Response } from 'express';
import type { Logger } from 'pino';
import { AppError } from 'src/common/errors/app-error.js';
import { reportedError } from 'src/common/filters/all-exceptions.filter.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { listEnvelope } from 'src/common/pagination/pagination.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { toDatasetResponse } from 'src/modules/datasets/dto/dataset.dto.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import { DocumentsService } from 'src/modules/documents/documents.service.js';
import { toToolDocument } from 'src/modules/mcp/dto/tool-results.dto.js';
import { accountOf, type McpContext } from 'src/modules/mcp/mcp-context.js';
import { McpToolsService } from 'src/modules/mcp/mcp-tools.service.js';
import { asMcpError, RESOURCE_NOT_FOUND } from 'src/modules/mcp/mcp.errors.js';
import type { ToolCall } from 'src/modules/mcp/tools/tool.js';

export const ASK_DATASET = 'ask_dataset';
const DATASET_URI = /^dataset:\/\/([^/?#]+)$/;
/** Datasets per page of `resources/list`, and documents a dataset resource lists. */
const RESOURCE_PAGE = 100;

/**
 * The MCP server of one request. The endpoint is stateless (no `Mcp-Session-Id`): each POST gets a
 * server and a transport of its own, built from the request's caller and endpoint, so that any API
 * process serves any request. Tools are `McpToolsService`'s; datasets as resources and the prompt are here.
 */
@Injectable()
export class McpService {
  constructor(
    private readonly tools: McpToolsService,
    private readonly datasets: DatasetsService,
    private readonly documents: DocumentsService,
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
    try {
      await server.connect(transport);
      await transport.handleRequest(context.request, response, message);
    } finally {
      await server.close();
    }
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
      tools: this.tools.list(context),
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
      return this.tools.call(context, request.params.name, request.params.arguments ?? {}, call);
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
    const notFound = () => new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri });
    const datasetId = datasetIdOf(uri);
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
        { items: documents.items.map(toToolDocument), total: documents.total },
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

/** The dataset a `dataset://` URI names, or null for any other URI (a malformed escape included). */
function datasetIdOf(uri: string): string | null {
  const match = DATASET_URI.exec(uri);
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return null;
  }
}
