import { Controller, Delete, Get, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { ApiBody, ApiExcludeEndpoint, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { AppError, CommonErrors } from 'src/common/errors/app-error.js';
import { reportedError } from 'src/common/filters/all-exceptions.filter.js';
import { ApiErrors } from 'src/common/http/api-errors.decorator.js';
import { AnswersBodyErrors } from 'src/common/http/request-body.interceptor.js';
import { LOGGER } from 'src/common/logging/logger.js';
import { CORE_CONFIG, type CoreConfig } from 'src/config/core.config.js';
import { Auth, CurrentPrincipal, Public, PublicReadable } from 'src/modules/auth/auth.decorators.js';
import { isAuthenticated, type Principal } from 'src/modules/auth/auth.types.js';
import { serviceBase } from 'src/modules/auth/oauth/resources.js';
import { AnswersRateLimit } from 'src/modules/auth/rate-limits/rate-limit.guard.js';
import type { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';
import { jsonRpcError } from 'src/modules/mcp/json-rpc.js';
import {
  asksForProgress,
  paramsIssue,
  requestId,
  requiredScopes,
  toolCallId,
} from 'src/modules/mcp/mcp-messages.js';
import { toolError } from 'src/modules/mcp/mcp-tools.service.js';
import { McpService } from 'src/modules/mcp/mcp.service.js';

const MESSAGE_SCHEMA = {
  type: 'object',
  description: 'One JSON-RPC 2.0 message of the Model Context Protocol',
  example: {
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'search', arguments: { query: 'install' } },
  },
} as const;

const DESCRIPTION =
  'Streamable HTTP transport of the Model Context Protocol (2025-06-18 and 2025-11-25), stateless: no Mcp-Session-Id, ' +
  'one JSON-RPC message per POST, answered as JSON (or as server-sent events when a tool call asks for progress). ' +
  'Send `Accept: application/json, text/event-stream`. Tools: search, batch_search, list_datasets, list_documents, ' +
  'fetch, evaluate, add_document, replace_document. See docs/mcp.md.';

/**
 * The MCP endpoints: `/v1/mcp` for every dataset the caller can see, and `/v1/mcp/datasets/{id}` for
 * one, which works without credentials when the dataset is public. Before the MCP server reads a
 * message, the endpoint answers what the HTTP layer owns: a body that is not one JSON-RPC message, a
 * spent budget, and a credential that lacks what the message needs.
 */
@ApiTags('mcp')
@Controller('v1/mcp')
export class McpController {
  constructor(
    private readonly mcp: McpService,
    private readonly datasets: DatasetsService,
    @Inject(CORE_CONFIG) private readonly config: CoreConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @Post()
  @Auth({ scope: 'search' })
  @AnswersBodyErrors()
  @AnswersRateLimit()
  @ApiOperation({
    operationId: 'callMcp',
    summary: 'MCP endpoint for all your datasets',
    description: DESCRIPTION,
  })
  @ApiBody({ schema: MESSAGE_SCHEMA })
  @ApiOkResponse({ description: 'The JSON-RPC response (none for a notification: 202)' })
  @ApiErrors([401, 403, 429])
  async endpoint(
    @CurrentPrincipal() caller: Principal,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    await this.serve(caller, null, request, response);
  }

  @Post('datasets/:dataset_id')
  @PublicReadable({ scope: 'search' })
  @AnswersBodyErrors()
  @AnswersRateLimit()
  @ApiOperation({
    operationId: 'callDatasetMcp',
    summary: 'MCP endpoint for one dataset',
    description: `${DESCRIPTION} The tools take no dataset_id: the URL names it. A public dataset's endpoint needs no credentials.`,
  })
  @ApiBody({ schema: MESSAGE_SCHEMA })
  @ApiOkResponse({ description: 'The JSON-RPC response (none for a notification: 202)' })
  @ApiErrors([401, 403, 404, 429], { 404: ['dataset_not_found'] })
  async datasetEndpoint(
    @CurrentPrincipal() caller: Principal,
    @Param('dataset_id') datasetId: string,
    @Req() request: Request,
    @Res() response: Response,
  ): Promise<void> {
    await this.serve(caller, datasetId, request, response);
  }

  /** A stateless server offers no stream of its own to listen to: 405, as the transport's spec has it. */
  @Get(['', 'datasets/:dataset_id'])
  @Public({ limit: 'none' })
  @ApiExcludeEndpoint()
  stream(@Res() response: Response): void {
    methodNotAllowed(response);
  }

  /** Nor has it a session to end. */
  @Delete(['', 'datasets/:dataset_id'])
  @Public({ limit: 'none' })
  @ApiExcludeEndpoint()
  endSession(@Res() response: Response): void {
    methodNotAllowed(response);
  }

  private async serve(
    caller: Principal,
    datasetId: string | null,
    request: Request,
    response: Response,
  ): Promise<void> {
    if (request.bodyError) return this.refuseBody(request, response, request.bodyError);
    const message: unknown = request.body;
    if (Array.isArray(message)) {
      // Batches left JSON-RPC over MCP with 2025-06-18; refusing them keeps one request one count.
      response
        .status(400)
        .json(jsonRpcError(ErrorCode.InvalidRequest, 'Batches are not supported: POST one JSON-RPC message'));
      return;
    }
    if (request.rateLimitError) return this.answerRateLimit(request.rateLimitError, message, response);
    const invalid = paramsIssue(message);
    if (invalid) return answerInvalidParams(message, invalid, response);
    for (const scope of requiredScopes(message)) {
      if (caller.scopes.includes(scope)) continue;
      throw isAuthenticated(caller)
        ? CommonErrors.insufficientScope(scope)
        : CommonErrors.authenticationRequired();
    }
    const dataset = datasetId === null ? null : await this.endpointDataset(caller, datasetId);
    const base = serviceBase(request, this.config);
    await this.mcp.serve({ caller, dataset, base, request }, response, message, {
      progress: asksForProgress(message),
    });
  }

  /**
   * The dataset a per-dataset endpoint serves. Without credentials only a public one is there: any
   * other asks for them (401 and its challenge), so that a client can sign in and try again.
   */
  private async endpointDataset(caller: Principal, datasetId: string): Promise<DatasetEntity> {
    try {
      return await this.datasets.get(caller, datasetId);
    } catch (error) {
      const missing = error instanceof AppError && error.code === 'dataset_not_found';
      throw missing && !isAuthenticated(caller) ? CommonErrors.authenticationRequired() : error;
    }
  }

  /**
   * A body that is not JSON (or not UTF-8, or absurdly nested) is a parse error; one the service
   * would not read at all (too large, an unknown encoding) an invalid request. Either way the
   * contract's code comes along as the error's data.
   */
  private refuseBody(request: Request, response: Response, refusal: Error): void {
    const error = reportedError(refusal, request, this.logger);
    const unparsable = error.code === 'invalid_json' || error.code === 'validation_error';
    const data = { code: error.code, ...(error.details ? { details: error.details } : {}) };
    response
      .status(unparsable ? 400 : error.status)
      .json(jsonRpcError(unparsable ? ErrorCode.ParseError : ErrorCode.InvalidRequest, error.message, data));
  }

  /**
   * A spent budget: a tool call gets a tool error that an agent reads (code rate_limit_exceeded and
   * retry_after), with the status and headers of a success; any other message gets the 429.
   */
  private answerRateLimit(error: AppError, message: unknown, response: Response): void {
    const id = toolCallId(message);
    if (id === null) throw error;
    for (const [name, value] of Object.entries(error.headers ?? {})) response.setHeader(name, value);
    response.status(200).json({ jsonrpc: '2.0', id, result: toolError(error) });
  }
}

/** -32602 for a request (a notification, which is answered with nothing, is dropped). */
function answerInvalidParams(message: unknown, issue: string, response: Response): void {
  const id = requestId(message);
  if (id === undefined) {
    response.status(202).end();
    return;
  }
  response.status(200).json(jsonRpcError(ErrorCode.InvalidParams, `Invalid params: ${issue}`, undefined, id));
}

function methodNotAllowed(response: Response): void {
  response
    .status(405)
    .setHeader('Allow', 'POST')
    .json(jsonRpcError(-32000, 'Method not allowed: this server is stateless; POST one JSON-RPC message'));
}
