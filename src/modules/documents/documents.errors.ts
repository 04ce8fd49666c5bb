import { AppError } from 'src/common/errors/app-error.js';
import { shownId } from 'src/common/ids/ids.js';
import { SUPPORTED_EXTENSIONS } from 'src/modules/documents/file-kinds.js';

export const DOCUMENT_LIMITS = {
  perDataset: 10_000,
  fileBytes: 10 * 1024 * 1024,
  contentCharacters: 1_000_000,
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
  stillProcessing: (documentId: string) =>
    new AppError(409, 'document_processing', `Document "${documentId}" is still being processed`, {
      document_id: documentId,
    }),
  fileRequired: () =>
    new AppError(400, 'validation_error', 'A multipart upload needs a "file" part', {
      field: 'file',
      issue: 'is required',
      errors: [{ field: 'file', issue: 'is required' }],
    }),
};
