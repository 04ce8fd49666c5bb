import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { AppError } from 'src/common/errors/app-error.js';
import { shownId } from 'src/common/ids/ids.js';

/** MCP's code for a resource that does not exist (its spec, Resources: Error handling). */
export const RESOURCE_NOT_FOUND = -32002;

export const McpErrors = {
  chunkNotFound: (chunkId: string) =>
    new AppError(404, 'chunk_not_found', `Search result "${shownId(chunkId)}" not found`, {
      chunk_id: shownId(chunkId),
    }),
  notAnId: () =>
    new AppError(
      400,
      'validation_error',
      'id must be a document id (doc_...) or a search result id (chk_...)',
      {
        field: 'id',
        issue: 'must be a document id (doc_...) or a search result id (chk_...)',
      },
    ),
  datasetFixed: (field: 'dataset_id' | 'dataset_ids' = 'dataset_id') =>
    new AppError(400, 'validation_error', `${field} is set by this endpoint: its URL names the dataset`, {
      field,
      issue: 'is set by this endpoint: its URL names the dataset',
    }),
};

/**
 * An error of a request that is not a tool call (listing or reading resources, getting a prompt) as
 * a JSON-RPC error: the client's fault as invalid params, the service's as an internal error, with
 * the contract's code and details as its data.
 */
export function asMcpError(error: AppError, code?: number): McpError {
  const rpcCode = code ?? (error.status < 500 ? ErrorCode.InvalidParams : ErrorCode.InternalError);
  return new McpError(rpcCode, error.message, {
    code: error.code,
    ...(error.details ? { details: error.details } : {}),
  });
}
