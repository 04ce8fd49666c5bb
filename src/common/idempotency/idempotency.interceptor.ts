import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { catchError, from, mergeMap, type Observable, of, throwError } from 'rxjs';
import { AppError, CommonErrors, errorBody, PartlyAppliedError } from 'src/common/errors/app-error.js';
import type { ErrorCode } from 'src/common/errors/error-codes.js';
import { streamedBodyOf } from 'src/common/http/streamed-body.js';
import {
  IdempotencyRepository,
  IdempotencyStoreError,
} from 'src/common/idempotency/idempotency.repository.js';
import {
  IDEMPOTENT_REPLAY,
  IDEMPOTENT_STREAMED_BODY,
  IdempotentReplays,
} from 'src/common/idempotency/idempotent-replays.js';
import type { IdempotencyKeyEntity } from 'src/common/idempotency/idempotency-key.entity.js';
import { IDEMPOTENCY_CONFIG, type IdempotencyConfig } from 'src/common/idempotency/idempotency.config.js';

type Acquired = { kind: 'claimed'; token: string } | { kind: 'replay'; record: IdempotencyKeyEntity };

/** What identifies a request, for a claim while it runs and for the record once it is answered. */
interface Fingerprint {
  claimed: Buffer;
  /** The whole request's; for a streamed body, known once the body has been read (this reads it). */
  whole(): Promise<Buffer>;
  /** Whether the body has been read already, so that the handler could no longer read it. */
  spent(): boolean;
}

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
/** How long a request waits for a concurrent one holding the same key before answering 409. */
const WAIT_FOR_CONCURRENT_MS = 10_000;
const POLL_INTERVAL_MS = 25;

/** JSON with object keys sorted, so that the same body sent with another key order hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    if (Buffer.isBuffer(value)) return JSON.stringify(value.toString('base64'));
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * What identifies "the same request": method, route and its parameters, body, and an uploaded file's
 * name and bytes (the name decides the stored filename and, with the bytes, the document's type). The
 * route as matched, not the URL as written: `/v1/datasets/` and `/V1/Datasets` reach the same handler,
 * and a retry that spells its URL another way is the same request.
 */
export function requestFingerprint(request: Request): Buffer {
  const hash = createHash('sha256').update(requestTarget(request));
  hash.update(canonicalJson(request.body ?? null));
  const file = (request as Request & { file?: { originalname?: string; buffer?: Buffer } }).file;
  if (file?.buffer) hash.update(`\n${JSON.stringify(file.originalname ?? null)}\n`).update(file.buffer);
  return hash.digest();
}

function requestTarget(request: Request): string {
  const route = (request.route as { path?: string } | undefined)?.path;
  const target = route ? `${route} ${canonicalJson(request.params)}` : request.originalUrl;
  return `${request.method} ${target}\n`;
}

/**
 * A route that reads its body as it arrives (`@Idempotent({ streamedBodyBytes })`) is claimed by its
 * target alone, and recorded, once answered, with the digest of its body as read. A repeat reads its
 * own body into a digest (never holding it) before it compares, which it does only with a completed
 * record.
 */
function streamedFingerprint(request: Request, maxBytes: number): Fingerprint {
  const claimed = createHash('sha256')
    .update(`${requestTarget(request)}streamed\n`)
    .digest();
  const body = streamedBodyOf(request, maxBytes);
  let whole: Buffer | undefined;
  return {
    claimed,
    whole: async () => {
      if (!whole) {
        await body.drain();
        whole = createHash('sha256').update(claimed).update(body.digest()).digest();
      }
      return whole;
    },
    spent: () => body.bytesRead > 0,
  };
}

function wholeFingerprint(request: Request): Fingerprint {
  const fingerprint = requestFingerprint(request);
  return { claimed: fingerprint, whole: () => Promise.resolve(fingerprint), spent: () => false };
}

/** A stored error answer, answered again as the filter first wrote it. */
function storedError(status: number, body: unknown): AppError {
  const { error, code, details } = body as {
    error: string;
    code: ErrorCode;
    details?: Record<string, unknown>;
  };
  return new AppError(status, code, error, details);
}

/**
 * `Idempotency-Key` for creating POSTs: the first request with a key runs and its successful response is
 * stored for the configured time (24 h by default); a repeat with the same request replays it with
 * `Idempotent-Replayed: true` and creates nothing; a repeat with another request is 422
 * idempotency_key_reused. Keys are scoped per account. A request that fails releases its key.
 * Claims carry a token, so a request whose claim was taken over cannot overwrite its successor's.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly repository: IdempotencyRepository,
    private readonly replays: IdempotentReplays,
    private readonly reflector: Reflector,
    @Inject(IDEMPOTENCY_CONFIG) private readonly config: IdempotencyConfig,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<Request>();
    const key = request.headers[IDEMPOTENCY_HEADER];
    const accountId = request.principal?.accountId;
    if (key === undefined || !accountId) return next.handle();
    if (typeof key !== 'string' || !KEY_PATTERN.test(key)) throw CommonErrors.idempotencyKeyInvalid();

    const streamedBytes = this.reflector.get<number | undefined>(
      IDEMPOTENT_STREAMED_BODY,
      context.getHandler(),
    );
    const fingerprint =
      streamedBytes === undefined ? wholeFingerprint(request) : streamedFingerprint(request, streamedBytes);
    const outcome = await this.acquire(accountId, key, fingerprint);
    if (outcome.kind === 'replay') {
      context.switchToHttp().getResponse<Response>().setHeader(REPLAYED_HEADER, 'true');
      const { responseBody, responseStatus } = outcome.record;
      if (responseStatus !== null) throw storedError(responseStatus, responseBody);
      const check = this.reflector.get<string | undefined>(IDEMPOTENT_REPLAY, context.getHandler());
      // The status is the route's own: each route has one success status.
      return of(check ? await this.replays.apply(check, accountId, responseBody) : responseBody);
    }

    const claim = { accountId, key, token: outcome.token };
    if (fingerprint.spent()) {
      // The body was read to compare it with a record that has expired since: nothing is left to run.
      await this.repository.release(claim);
      throw CommonErrors.idempotencyKeyInProgress();
    }
    return next.handle().pipe(
      // If storing the response fails after the resource was created, the claim stays pending rather
      // than being released: a retry then waits, instead of creating the resource a second time.
      mergeMap((body: unknown) =>
        from(
          fingerprint
            .whole()
            .then((requestHash) => this.repository.complete(claim, body ?? null, { requestHash }))
            .then(() => body),
        ),
      ),
      catchError((error: unknown) => {
        // Passed on whole, as a 500 whatever its cause: a 503 would invite a retry of work already done.
        if (error instanceof IdempotencyStoreError) return throwError(() => error);
        if (error instanceof PartlyAppliedError) {
          const stored = fingerprint
            .whole()
            .then((requestHash) =>
              this.repository.complete(claim, errorBody(error), { requestHash, status: error.status }),
            );
          return from(stored).pipe(mergeMap(() => throwError(() => error)));
        }
        return from(this.repository.release(claim)).pipe(mergeMap(() => throwError(() => error)));
      }),
    );
  }

  /**
   * Either claims the key for this request, or returns the stored response of the earlier request with
   * it, waiting while that one is still running. A concurrent request that failed releases the key,
   * and then this one claims it and runs.
   */
  private async acquire(accountId: string, key: string, fingerprint: Fingerprint): Promise<Acquired> {
    const deadline = Date.now() + WAIT_FOR_CONCURRENT_MS;
    for (;;) {
      const token = await this.repository.claim(accountId, key, fingerprint.claimed, this.config.ttlHours);
      if (token) return { kind: 'claimed', token };
      const record = await this.repository.find(accountId, key);
      if (record?.state === 'completed') {
        if (!record.requestHash.equals(await fingerprint.whole())) throw CommonErrors.idempotencyKeyReused();
        return { kind: 'replay', record };
      }
      if (record && !record.requestHash.equals(fingerprint.claimed))
        throw CommonErrors.idempotencyKeyReused();
      if (Date.now() > deadline) throw CommonErrors.idempotencyKeyInProgress();
      if (record) await sleep(POLL_INTERVAL_MS);
    }
  }
}
