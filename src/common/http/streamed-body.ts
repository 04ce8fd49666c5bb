import { createHash } from 'node:crypto';
import type { Request } from 'express';
import { CommonErrors } from 'src/common/errors/app-error.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The body of a route that reads it as it arrives (`streamedBodyOf`). */
      streamedBody?: StreamedBody;
    }
  }
}

/**
 * A request body read as it arrives, never held whole: at most `maxBytes` of it are passed on, and the
 * first byte past them ends the reading (`exceeded`). Every byte read, up to that one, goes into a
 * digest, so that `Idempotency-Key` can tell the same body from another (`IdempotencyInterceptor`)
 * however the client cut it into chunks.
 */
export class StreamedBody {
  private readonly hash = createHash('sha256');
  private iterator?: AsyncIterator<unknown>;
  private done = false;
  private bytes = 0;
  /** Whether the body held more than `maxBytes`. */
  exceeded = false;

  constructor(
    private readonly request: Request,
    readonly maxBytes: number,
  ) {}

  get bytesRead(): number {
    return this.bytes;
  }

  /** The next chunk within the limit, or null at the body's end or past the limit. */
  async next(): Promise<Buffer | null> {
    if (this.done) return null;
    // Not the default iterator: leaving it early would destroy the request, and with it the socket
    // the answer goes out on.
    this.iterator ??= this.request.iterator({ destroyOnReturn: false })[Symbol.asyncIterator]();
    let result: IteratorResult<unknown>;
    try {
      result = await this.iterator.next();
    } catch (error) {
      this.done = true;
      if (!this.request.complete) throw CommonErrors.requestAborted();
      throw error;
    }
    if (result.done) {
      this.done = true;
      // A connection closed mid-body ends the stream without an error on some Node.js versions.
      if (!this.request.complete) throw CommonErrors.requestAborted();
      return null;
    }
    const chunk = Buffer.isBuffer(result.value) ? result.value : Buffer.from(String(result.value));
    const room = this.maxBytes + 1 - this.bytes;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.hash.update(part);
    this.bytes += part.length;
    if (this.bytes > this.maxBytes) {
      this.exceeded = true;
      this.done = true;
      return null;
    }
    return part;
  }

  async *chunks(): AsyncGenerator<Buffer> {
    for (let chunk = await this.next(); chunk !== null; chunk = await this.next()) yield chunk;
  }

  /** Reads the rest of the body (within the limit) into the digest alone. */
  async drain(): Promise<void> {
    while ((await this.next()) !== null);
  }

  /** The digest of the bytes read so far; call it once reading has ended. */
  digest(): Buffer {
    return this.hash.copy().digest();
  }
}

/** The request's streamed body, made on first use, so that every reader of one request shares it. */
export function streamedBodyOf(request: Request, maxBytes: number): StreamedBody {
  request.streamedBody ??= new StreamedBody(request, maxBytes);
  return request.streamedBody;
}
