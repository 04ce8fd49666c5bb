import { serveRequests } from 'src/common/threads/worker-thread.js';
import { extractFile } from 'src/modules/ingestion/extraction/extract-file.js';
import type {
  ExtractionReply,
  ExtractionRequest,
} from 'src/modules/ingestion/extraction/extraction.service.js';
import { PermanentProcessingError } from 'src/modules/ingestion/ingestion.errors.js';

/**
 * An extraction thread of `ExtractionService`: one file at a time. A file that cannot be read comes
 * back as its failure (the error's code and details do not survive the thread boundary); anything else
 * thrown fails the request as it is, and the job is retried.
 */
await serveRequests<ExtractionRequest, ExtractionReply, void>(() =>
  Promise.resolve({
    info: undefined,
    handle: async ({ kind, bytes }: ExtractionRequest): Promise<ExtractionReply> => {
      try {
        return {
          extracted: await extractFile(kind, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)),
        };
      } catch (error) {
        if (!(error instanceof PermanentProcessingError)) throw error;
        return { failure: { code: error.code, message: error.message, details: error.details } };
      }
    },
  }),
);
