import { AppError, CommonErrors } from 'src/common/errors/app-error.js';
import { shownId } from 'src/common/ids/ids.js';
import { SUPPORTED_EXTENSIONS } from 'src/modules/documents/file-kinds.js';

export const DOCUMENT_LIMITS = {
  perDataset: 10_000,
  fileBytes: 10 * 1024 * 1024,
  contentCharacters: 1_000_000,
} as const;

/** A bulk upload's bounds (`POST .../documents/bulk`; docs/decisions.md, Uploads and limits). */
export const BULK_LIMITS = {
  documents: 1_000,
  bodyBytes: 64 * 1024 * 1024,
  /** A line of the largest file (10 MB, 13.4 MB as base64) or text, with its metadata. */
  lineBytes: 16 * 1024 * 1024,
  /** A group is written in one transaction once it holds this many documents or bytes. */
  groupDocuments: 100,
  groupBytes: 16 * 1024 * 1024,
} as const;

export const DocumentErrors = {
  notFound: (documentId: string) =>
    new AppError(404, 'document_not_found', `Document "${shownId(documentId)}" not found`, {
      document_id: shownId(documentId),
    }),
  fileTooLarge: () =>
    new AppError(413, 'file_too_large', `Files may be at most ${DOCUMENT_LIMITS.fileBytes} bytes (10 MB)`, {
      limit_bytes: DOCUMENT_LIMITS.fileBytes,
    }),
  contentTooLarge: (characters: number) =>
    new AppError(
      413,
      'content_too_large',
      `Text content may be at most ${DOCUMENT_LIMITS.contentCharacters} characters; this has ${characters}`,
      { limit_characters: DOCUMENT_LIMITS.contentCharacters, characters },
    ),
  limitReached: () =>
    new AppError(
      422,
      'document_limit_reached',
      `A dataset can hold at most ${DOCUMENT_LIMITS.perDataset} documents; delete one to add another`,
      { limit: DOCUMENT_LIMITS.perDataset },
    ),
  unsupportedFileType: (reason: string, detectedType?: string) =>
    new AppError(415, 'unsupported_file_type', `Unsupported file type: ${reason}`, {
      reason,
      ...(detectedType ? { detected_type: detectedType } : {}),
      supported_extensions: SUPPORTED_EXTENSIONS,
      supported_types: [
        'text',
        'markdown',
        'csv',
        'pdf',
        'docx',
        'pptx',
        'jpeg',
        'png',
        'code',
        'json',
        'xml',
        'yaml',
      ],
    }),
  tooManyDocuments: () =>
    new AppError(
      413,
      'too_many_documents',
      `A bulk upload may hold at most ${BULK_LIMITS.documents} documents; send the rest in another request`,
      { limit: BULK_LIMITS.documents },
      { Connection: 'close' },
    ),
  bulkTooLarge: () =>
    new AppError(
      413,
      'payload_too_large',
      `A bulk upload may be at most ${BULK_LIMITS.bodyBytes} bytes; send the rest in another request`,
      { limit_bytes: BULK_LIMITS.bodyBytes },
      // The rest of the body is not read: the connection cannot carry another request.
      { Connection: 'close' },
    ),
  lineTooLong: (bytes: number) =>
    new AppError(413, 'payload_too_large', `A line may be at most ${BULK_LIMITS.lineBytes} bytes`, {
      limit_bytes: BULK_LIMITS.lineBytes,
      bytes,
    }),
  emptyBulk: () =>
    CommonErrors.validation([
      { field: 'body', issue: 'must hold at least one document, one JSON object a line' },
    ]),
  stillProcessing: (documentId: string) =>
    new AppError(409, 'document_processing', `Document "${documentId}" is still being processed`, {
      document_id: documentId,
    }),
  /** A read of the text or chunks of a failed document without chunks in the index. */
  failed: (documentId: string, error: { code: string; message: string } | null) =>
    new AppError(
      409,
      'document_failed',
      `Document "${documentId}" failed processing and has no text or chunks; reprocess it or upload it again`,
      {
        document_id: documentId,
        status: 'failed',
        ...(error ? { error: { code: error.code, message: error.message } } : {}),
      },
    ),
  chunkNotFound: (chunkId: string) =>
    new AppError(404, 'chunk_not_found', `Chunk "${shownId(chunkId)}" not found in this document`, {
      chunk_id: shownId(chunkId),
    }),
  offsetPastEnd: (length: number) =>
    CommonErrors.validation([
      { field: 'offset', issue: `must be at most ${length}, the length of the document's text` },
    ]),
  fileRequired: () =>
    new AppError(400, 'validation_error', 'A multipart upload needs a "file" part', {
      field: 'file',
      issue: 'is required',
      errors: [{ field: 'file', issue: 'is required' }],
    }),
};
