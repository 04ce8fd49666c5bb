/**
 * Every `code` an error body can carry. `AppError` takes only these, so a new code is added here first;
 * the OpenAPI document publishes the API's as the `ErrorCode` enum, and docs/decisions.md (Errors) says
 * when each is answered and with which status (a unit test keeps the two in step).
 */
export const API_ERROR_CODES = [
  // 400
  'validation_error',
  'invalid_json',
  'invalid_content_encoding',
  'request_aborted',
  'bad_request',
  'invalid_metadata',
  'invalid_name',
  'invalid_idempotency_key',
  'invalid_filter',
  'too_many_filters',
  'too_many_queries',
  'query_too_long',
  'rerank_unavailable',
  'semantic_unavailable',
  'invalid_events',
  'invalid_webhook_url',
  'invalid_host',
  'archive_version_unsupported',
  'archive_corrupt',
  'archive_truncated',
  'archive_size_mismatch',
  'archive_unsafe_path',
  'archive_invalid_vector',
  'archive_duplicate_id',
  'archive_unknown_document',
  // 401
  'authentication_required',
  'invalid_api_key',
  'invalid_token',
  'invalid_authorization_header',
  'invalid_session',
  'invalid_credentials',
  // 403
  'insufficient_scope',
  'forbidden',
  'csrf_rejected',
  'grant_restricted',
  // 404
  'not_found',
  'dataset_not_found',
  'document_not_found',
  'chunk_not_found',
  'webhook_not_found',
  'delivery_not_found',
  // 405, 406, 408, 431
  'method_not_allowed',
  'not_acceptable',
  'request_timeout',
  'headers_too_large',
  // 409
  'conflict',
  'dataset_name_conflict',
  'document_processing',
  'document_failed',
  'idempotency_key_in_progress',
  'reembed_in_progress',
  // 413, 415, 422
  'payload_too_large',
  'file_too_large',
  'content_too_large',
  'too_many_documents',
  'unsupported_media_type',
  'unsupported_file_type',
  'unprocessable_entity',
  'dataset_limit_reached',
  'document_limit_reached',
  'archive_over_limits',
  'webhook_limit_reached',
  'idempotency_key_reused',
  // 429, 5xx
  'rate_limit_exceeded',
  'internal_error',
  'rerank_failed',
  'embedding_unavailable',
  'database_unavailable',
  'session_store_unavailable',
  'shutting_down',
  'not_ready',
  'query_timeout',
] as const;

/** The command line's own (src/cli.ts), and start-up's: they never reach an HTTP client. */
export const COMMAND_LINE_ERROR_CODES = [
  'database_unreachable',
  'account_not_found',
  'api_key_not_found',
  'client_not_found',
  'user_not_found',
  'invalid_account_name',
  'invalid_display_name',
  'invalid_email',
  'invalid_password',
  'invalid_role',
  'email_taken',
  'reembed_lock_lost',
  'reembed_cancelled',
] as const;

export type ErrorCode = (typeof API_ERROR_CODES)[number] | (typeof COMMAND_LINE_ERROR_CODES)[number];
