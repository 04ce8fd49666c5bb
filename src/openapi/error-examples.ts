import { AppError, CommonErrors } from 'src/common/errors/app-error.js';
import type { API_ERROR_CODES } from 'src/common/errors/error-codes.js';
import { SessionErrors } from 'src/modules/auth/sessions/sessions.errors.js';
import { DatasetErrors } from 'src/modules/datasets/datasets.errors.js';
import { DocumentErrors } from 'src/modules/documents/documents.errors.js';
import { ReembedErrors } from 'src/modules/embeddings/reembed.errors.js';
import { McpErrors } from 'src/modules/mcp/mcp.errors.js';
import { SearchErrors } from 'src/modules/search/search.errors.js';
import { TransferErrors } from 'src/modules/transfer/transfer.errors.js';
import { DeliveryErrors, WebhookErrors } from 'src/modules/webhooks/webhooks.errors.js';

type ApiErrorCode = (typeof API_ERROR_CODES)[number];

const DATASET_ID = 'ds_4Jq0Zt6mYwQ1bR8sVx3nLp';
const DOCUMENT_ID = 'doc_7Yh2kQ9mWz4Lp0sVt3nB8x';

/**
 * One error of each code, made by the factory the service itself answers with, so that the OpenAPI
 * document's examples say what a client will read. A code added to `API_ERROR_CODES` needs one here.
 */
export const ERROR_EXAMPLES: Record<ApiErrorCode, AppError> = {
  validation_error: CommonErrors.validation([{ field: 'limit', issue: 'must not be greater than 50' }]),
  invalid_json: CommonErrors.invalidJson('Unexpected end of JSON input'),
  invalid_content_encoding: CommonErrors.invalidContentEncoding('gzip', 'incorrect header check'),
  request_aborted: CommonErrors.requestAborted(),
  bad_request: CommonErrors.badRequest('Invalid method encountered'),
  invalid_metadata: CommonErrors.invalidMetadata('must be an object'),
  invalid_name: new AppError(400, 'invalid_name', 'Invalid name: must be 1-200 characters', {
    field: 'name',
    issue: 'must be 1-200 characters',
  }),
  invalid_idempotency_key: CommonErrors.idempotencyKeyInvalid(),
  invalid_filter: SearchErrors.invalidFilter('year', '$gte needs a number, a string or a date'),
  too_many_filters: SearchErrors.tooManyFilters(11),
  too_many_queries: SearchErrors.tooManyQueries(11),
  query_too_long: SearchErrors.queryTooLong('query', 1_204),
  rerank_unavailable: SearchErrors.rerankUnavailable(),
  semantic_unavailable: SearchErrors.semanticUnavailable('no embedding provider is configured'),
  invalid_events: WebhookErrors.invalidEvents(['document.created']),
  invalid_webhook_url: WebhookErrors.invalidUrl('must use https'),
  invalid_host: new AppError(400, 'invalid_host', 'A valid Host header is required'),
  archive_version_unsupported: TransferErrors.versionUnsupported('dss-dataset-archive', 2, { record: 1 }),
  archive_corrupt: TransferErrors.corrupt('a record is not JSON (Unexpected end of JSON input)', {
    record: 7,
  }),
  archive_truncated: TransferErrors.truncated('the gzip stream stops before its end'),
  archive_size_mismatch: TransferErrors.sizeMismatch(5_120, 4_096, { record: 3, document_id: DOCUMENT_ID }),
  archive_unsafe_path: TransferErrors.unsafePath('../../etc/passwd', { record: 3, document_id: DOCUMENT_ID }),
  archive_invalid_vector: TransferErrors.invalidVector("383 dimensions where the archive's model has 384", {
    record: 4,
  }),
  archive_duplicate_id: TransferErrors.duplicateId(DOCUMENT_ID, { record: 9, document_id: DOCUMENT_ID }),
  archive_unknown_document: TransferErrors.unknownDocument(DOCUMENT_ID, { record: 4 }),
  authentication_required: CommonErrors.authenticationRequired(),
  invalid_api_key: CommonErrors.invalidApiKey(),
  invalid_token: CommonErrors.invalidAccessToken(),
  invalid_authorization_header: CommonErrors.invalidAuthorizationHeader(),
  invalid_session: CommonErrors.invalidSession(),
  invalid_credentials: SessionErrors.invalidCredentials(),
  insufficient_scope: CommonErrors.insufficientScope('datasets:write'),
  forbidden: DatasetErrors.notOwner(DATASET_ID),
  csrf_rejected: SessionErrors.csrfRejected('Sec-Fetch-Site is cross-site'),
  grant_restricted: DatasetErrors.grantRestricted(),
  not_found: CommonErrors.notFound('GET', '/v1/dataset'),
  dataset_not_found: DatasetErrors.notFound(DATASET_ID),
  document_not_found: DocumentErrors.notFound(DOCUMENT_ID),
  chunk_not_found: McpErrors.chunkNotFound('chk_1c2R6yTq0Wn3kPz8sLb4Vd'),
  webhook_not_found: WebhookErrors.notFound('wh_3kT9qLm2Vx8ZpR4sNc7bYw'),
  delivery_not_found: DeliveryErrors.notFound('dlv_2Hq8nR5tW1yZ4bC7eF0gJk'),
  method_not_allowed: CommonErrors.methodNotAllowed('PUT', `/v1/datasets/${DATASET_ID}`, [
    'GET',
    'HEAD',
    'PATCH',
    'DELETE',
  ]),
  not_acceptable: new AppError(406, 'not_acceptable', 'Not Acceptable'),
  request_timeout: CommonErrors.requestTimeout('request', 180_000),
  headers_too_large: CommonErrors.headersTooLarge(16_384),
  conflict: new AppError(409, 'conflict', 'Conflict'),
  dataset_name_conflict: DatasetErrors.nameConflict('Product handbook'),
  document_processing: DocumentErrors.stillProcessing(DOCUMENT_ID),
  document_failed: DocumentErrors.failed(DOCUMENT_ID, {
    code: 'invalid_pdf',
    message: 'The PDF is encrypted or password-protected',
  }),
  idempotency_key_in_progress: CommonErrors.idempotencyKeyInProgress(),
  reembed_in_progress: ReembedErrors.inProgress(DATASET_ID),
  payload_too_large: CommonErrors.payloadTooLarge(1_048_576),
  file_too_large: DocumentErrors.fileTooLarge(),
  content_too_large: DocumentErrors.contentTooLarge(1_200_000),
  too_many_documents: DocumentErrors.tooManyDocuments(),
  unsupported_media_type: CommonErrors.unsupportedMediaType('text/plain', ['application/json']),
  unsupported_file_type: DocumentErrors.unsupportedFileType('extension ".exe" is not supported'),
  unprocessable_entity: new AppError(422, 'unprocessable_entity', 'Unprocessable Entity'),
  dataset_limit_reached: DatasetErrors.limitReached(),
  document_limit_reached: DocumentErrors.limitReached(),
  archive_over_limits: TransferErrors.overLimits(
    'documents_per_dataset',
    'a dataset holds at most 10000 documents; this archive has 12000',
    { record: 1 },
  ),
  webhook_limit_reached: WebhookErrors.limitReached(),
  idempotency_key_reused: CommonErrors.idempotencyKeyReused(),
  rate_limit_exceeded: CommonErrors.rateLimited(1_800),
  internal_error: CommonErrors.internal(),
  rerank_failed: SearchErrors.rerankFailed('the reranker answered 503'),
  embedding_unavailable: SearchErrors.embeddingFailed('the embedding provider answered 503'),
  database_unavailable: CommonErrors.databaseUnavailable(),
  session_store_unavailable: CommonErrors.sessionStoreUnavailable(),
  shutting_down: CommonErrors.shuttingDown(),
  not_ready: new AppError(503, 'not_ready', 'Not ready', {
    checks: { postgres: { status: 'ok' }, redis: { status: 'error' } },
  }),
  query_timeout: SearchErrors.timeout(10_000),
};
