/** Codes a document can fail with; they appear in the document's `error` and in the failure event. */
export type ProcessingErrorCode =
  | 'invalid_pdf'
  | 'invalid_document'
  | 'no_text_extracted'
  | 'ocr_failed'
  | 'image_too_large'
  | 'extraction_limit_exceeded'
  | 'processing_error';

/**
 * A failure that retrying cannot fix (a corrupt or encrypted file, no text): the document fails at
 * once with this code. Anything else thrown in the pipeline is treated as transient and retried.
 */
export class PermanentProcessingError extends Error {
  constructor(
    readonly code: ProcessingErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'PermanentProcessingError';
  }
}

/** The most of a parser's or a library's message a document's error keeps, in characters. */
export const REASON_MAX_CHARACTERS = 1_000;

/**
 * A reason as a document's error shows it: a parser may put the whole input in its message (an XML
 * parser lists every unclosed tag), which would be stored and sent with every read of the document.
 */
export function briefReason(reason: string): string {
  if (reason.length <= REASON_MAX_CHARACTERS) return reason;
  const cut = reason.slice(0, REASON_MAX_CHARACTERS).replace(/[\uD800-\uDBFF]$/, '');
  return `${cut}… (${reason.length} characters in all)`;
}

export const IngestionErrors = {
  invalidPdf: (cause: string) => {
    const reason = briefReason(cause);
    return new PermanentProcessingError('invalid_pdf', `The PDF cannot be read: ${reason}`, { reason });
  },
  encryptedPdf: () =>
    new PermanentProcessingError('invalid_pdf', 'The PDF is encrypted or password-protected', {
      reason: 'encrypted',
    }),
  invalidDocument: (kind: string, cause: string) => {
    const reason = briefReason(cause);
    return new PermanentProcessingError('invalid_document', `The ${kind} file cannot be read: ${reason}`, {
      kind,
      reason,
    });
  },
  noText: (kind: string) =>
    new PermanentProcessingError('no_text_extracted', `No text could be extracted from this ${kind} file`, {
      kind,
    }),
  ocrFailed: (cause: string) => {
    const reason = briefReason(cause);
    return new PermanentProcessingError('ocr_failed', `Text recognition failed: ${reason}`, { reason });
  },
  imageTooLarge: (pixels: number, limit: number) =>
    new PermanentProcessingError(
      'image_too_large',
      `The image has ${pixels} pixels; at most ${limit} are processed`,
      {
        pixels,
        limit_pixels: limit,
      },
    ),
  /** Reading the file took longer, or more memory, than an extraction thread is given. */
  extractionTimedOut: (kind: string, seconds: number) =>
    new PermanentProcessingError(
      'extraction_limit_exceeded',
      `Reading the ${kind} file took more than ${seconds} seconds`,
      { kind, limit: 'time', timeout_seconds: seconds },
    ),
  extractionOutOfMemory: (kind: string, megabytes: number) =>
    new PermanentProcessingError(
      'extraction_limit_exceeded',
      `Reading the ${kind} file needed more than ${megabytes} MB of memory`,
      { kind, limit: 'memory', memory_mb: megabytes },
    ),
};
