import { type CallToolResult, ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import type { AppError } from 'src/common/errors/app-error.js';
import { reportedError } from 'src/common/filters/all-exceptions.filter.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { isAuthenticated } from 'src/modules/auth/auth.types.js';
import { PassagesRepository } from 'src/modules/chunk-index/passages.repository.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import { DocumentsRepository } from 'src/modules/documents/documents.repository.js';
import { DocumentsService } from 'src/modules/documents/documents.service.js';
import type { McpContext } from 'src/modules/mcp/mcp-context.js';
import {
  type ToolCall,
  type ToolDefinition,
  toolArguments,
  toolListing,
  type ToolServices,
} from 'src/modules/mcp/tools/tool.js';
import { TOOLS } from 'src/modules/mcp/tools/tool-registry.js';
import { EvaluationService } from 'src/modules/search/evaluation/evaluation.service.js';
import { SearchService } from 'src/modules/search/search.service.js';

/** A tool with its listings, built once (at boot, so that a DTO no schema can say fails then). */
interface ListedTool {
  definition: ToolDefinition;
  general: Tool;
  atDataset: Tool;
}

/**
 * Lists the tools (`TOOLS`) a caller is offered and runs their calls: arguments validated with the
 * tool's input DTO, then its handler with the services the REST routes call.
 */
@Injectable()
export class McpToolsService {
  private readonly services: ToolServices;
  private readonly tools: readonly ListedTool[] = TOOLS.map((definition) => ({
    definition,
    general: toolListing(definition, false),
    atDataset: toolListing(definition, true),
  }));

  constructor(
    search: SearchService,
    evaluation: EvaluationService,
    datasets: DatasetsService,
    documents: DocumentsService,
    passages: PassagesRepository,
    documentRows: DocumentsRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.services = { search, evaluation, datasets, documents, passages, documentRows };
  }

  /** The tools as the endpoint lists them to this caller. */
  list(context: McpContext): Tool[] {
    return this.offered(context).map((tool) => (context.dataset ? tool.atDataset : tool.general));
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
    const tool = this.offered(context).find((candidate) => candidate.definition.name === name)?.definition;
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    try {
      const input = await toolArguments(tool, args, context);
      const structured: Record<string, unknown> = {
        ...(await tool.run({ input, context, services: this.services, call })),
      };
      return { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
    } catch (exception) {
      return toolError(reportedError(exception, context.request, this.logger));
    }
  }

  /** Writing needs credentials, which an anonymous caller lacks. */
  private offered(context: McpContext): readonly ListedTool[] {
    return isAuthenticated(context.caller)
      ? this.tools
      : this.tools.filter((tool) => tool.definition.anonymous);
  }
}

/** The contract's error as a tool result: the same body the REST API answers, as text. */
export function toolError(error: AppError): CallToolResult {
  const body: Record<string, unknown> = { error: error.message, code: error.code };
  if (error.details !== undefined) body.details = error.details;
  if (error.status === 429) body.retry_after = Number(error.headers?.['Retry-After'] ?? 1);
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
}
