import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
  PayloadTooLargeException,
} from '@nestjs/common';
import { FileInterceptor } from '@nestjs/platform-express';
import type { Request } from 'express';
import type { Observable } from 'rxjs';
import { DOCUMENT_LIMITS, DocumentErrors } from 'src/modules/documents/documents.errors.js';

/** Room for the multipart framing and the metadata field around a file of the largest allowed size. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

const MulterFile = FileInterceptor('file', {
  limits: { fileSize: DOCUMENT_LIMITS.fileBytes, files: 1, fields: 4, fieldSize: 64 * 1024, parts: 6 },
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
    const declared = Number(request.headers['content-length'] ?? 0);
    if (declared > DOCUMENT_LIMITS.fileBytes + MULTIPART_OVERHEAD_BYTES) throw DocumentErrors.fileTooLarge();
    try {
      return await this.multer.intercept(context, next);
    } catch (error) {
      if (error instanceof PayloadTooLargeException) throw DocumentErrors.fileTooLarge();
      throw error;
    }
  }
}
