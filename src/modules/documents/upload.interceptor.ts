import {
  BadRequestException,
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
  PayloadTooLargeException,
} from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { type AppError, CommonErrors } from 'src/common/errors/app-error.js';
import { METADATA_LIMITS } from 'src/common/validation/metadata.js';
import { DOCUMENT_LIMITS, DocumentErrors } from 'src/modules/documents/documents.errors.js';

/** The largest text field (`metadata`, whose own limit is 16 KB as JSON). */
const FIELD_BYTES = 64 * 1024;
/** Room for the multipart framing and the metadata field around a file of the largest allowed size. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

const MulterFile = FileInterceptor('file', {
  limits: { fileSize: DOCUMENT_LIMITS.fileBytes, files: 1, fields: 4, fieldSize: FIELD_BYTES, parts: 6 },
  // Browsers and curl send a filename's UTF-8 bytes as they are (RFC 7578), without `filename*`;
  // read as latin1, multer's default, `résumé.txt` would be stored as `rÃ©sumÃ©.txt`.
  defParamCharset: 'utf8',
});

/**
 * Reads a multipart upload's `file` into memory, refusing files over 10 MB with 413 file_too_large:
 * at once when Content-Length already says so, else as soon as the stream passes the limit.
 * JSON requests pass through untouched.
 */
@Injectable()
export class UploadInterceptor implements NestInterceptor {
  private readonly multer = new MulterFile();

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<Request>();
    if (!request.is('multipart/form-data')) return next.handle();
    // Uploads are read as sent: multer does not decode a content coding, and a compressed body was
    // refused as malformed multipart, or an unknown coding stored as it came.
    const coding = request.headers['content-encoding']?.trim().toLowerCase();
    if (coding && coding !== 'identity') throw CommonErrors.unsupportedContentEncoding(coding, []);
    const declared = Number(request.headers['content-length'] ?? 0);
    if (declared > DOCUMENT_LIMITS.fileBytes + MULTIPART_OVERHEAD_BYTES) throw DocumentErrors.fileTooLarge();
    try {
      return await this.multer.intercept(context, next);
    } catch (error) {
      if (error instanceof PayloadTooLargeException) throw DocumentErrors.fileTooLarge();
      if (error instanceof BadRequestException) throw malformedUpload(error.cause);
      // The client went away mid-upload: its fault, not the server's (multer's plain Error said 500).
      if (!request.complete) throw CommonErrors.requestAborted();
      throw error;
    }
  }
}

/** A multipart body multer refused, as the contract's validation error naming the part at fault. */
function malformedUpload(cause: unknown): AppError {
  const { code = '', field, message } = (cause ?? {}) as { code?: string; field?: string; message?: string };
  // A part too large to read is metadata over its own limit, refused as that limit is (`metadataIssue`).
  if (code === 'LIMIT_FIELD_VALUE' && field === 'metadata') {
    return CommonErrors.invalidMetadata(`must be at most ${METADATA_LIMITS.maxBytes} bytes as JSON`);
  }
  const [part, issue] = refusal(code, field, message);
  return CommonErrors.validation([{ field: part, issue }]);
}

/** The part at fault, and what is wrong with it, for a multer error's code. */
function refusal(code: string, field?: string, message?: string): [string, string] {
  switch (code) {
    case 'LIMIT_UNEXPECTED_FILE':
      return [field ?? 'body', 'is not a file field: send the file as `file`'];
    case 'LIMIT_FILE_COUNT':
      return ['file', 'takes one file per upload'];
    case 'LIMIT_FIELD_VALUE':
      return [field ?? 'body', `must be at most ${FIELD_BYTES / 1024} KB`];
    case 'LIMIT_PART_COUNT':
    case 'LIMIT_FIELD_COUNT':
    case 'LIMIT_FIELD_KEY':
      return ['body', 'holds more than the parts `file` and `metadata`'];
    default:
      return ['body', `is not well-formed multipart/form-data (${message ?? 'unreadable'})`];
  }
}
