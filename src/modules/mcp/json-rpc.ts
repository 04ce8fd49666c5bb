/** A JSON-RPC 2.0 error response: what the endpoint answers for a message it cannot take. */
export function jsonRpcError(
  code: number,
  message: string,
  data?: unknown,
  id: string | number | null = null,
) {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data === undefined ? {} : { data }) } };
}
