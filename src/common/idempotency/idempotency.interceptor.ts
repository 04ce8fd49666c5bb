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
import { CommonErrors } from 'src/common/errors/app-error.js';
import {
  IdempotencyRepository,
  IdempotencyStoreError,
} from 'src/common/idempotency/idempotency.repository.js';
import { IDEMPOTENT_REPLAY, IdempotentReplays } from 'src/common/idempotency/idempotent-replays.js';
import { IDEMPOTENCY_CONFIG, type IdempotencyConfig } from 'src/common/idempotency/idempotency.config.js';

type Acquired = { kind: 'claimed'; token: string } | { kind: 'replay'; body: unknown };

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
  const route = (request.route as { path?: string } | undefined)?.path;
  const target = route ? `${route} ${canonicalJson(request.params)}` : request.originalUrl;
  const hash = createHash('sha256').update(`${request.method} ${target}\n`);
  hash.update(canonicalJson(request.body ?? null));
  const file = (request as Request & { file?: { originalname?: string; buffer?: Buffer } }).file;
  if (file?.buffer) hash.update(`\n${JSON.stringify(file.originalname ?? null)}\n`).update(file.buffer);
  return hash.digest();
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

    const outcome = await this.acquire(accountId, key, requestFingerprint(request));
    if (outcome.kind === 'replay') {
      const check = this.reflector.get<string | undefined>(IDEMPOTENT_REPLAY, context.getHandler());
      const body = check ? await this.replays.apply(check, accountId, outcome.body) : outcome.body;
      // The status is the route's own: only successful responses are stored, and each route has one.
      context.switchToHttp().getResponse<Response>().setHeader(REPLAYED_HEADER, 'true');
      return of(body);
    }

    const claim = { accountId, key, token: outcome.token };
    return next.handle().pipe(
      // If storing the response fails after the resource was created, the claim stays pending rather
      // than being released: a retry then waits, instead of creating the resource a second time.
      mergeMap((body: unknown) => from(this.repository.complete(claim, body ?? null).then(() => body))),
      catchError((error: unknown) => {
        // Passed on whole, as a 500 whatever its cause: a 503 would invite a retry of work already done.
        if (error instanceof IdempotencyStoreError) return throwError(() => error);
        return from(this.repository.release(claim)).pipe(mergeMap(() => throwError(() => error)));
      }),
    );
  }

  /**
   * Either claims the key for this request, or returns the stored response of the earlier request with
   * it, waiting while that one is still running. A concurrent request that failed releases the key,
   * and then this one claims it and runs.
   */
  private async acquire(accountId: string, key: string, fingerprint: Buffer): Promise<Acquired> {
    const deadline = Date.now() + WAIT_FOR_CONCURRENT_MS;
    for (;;) {
      const token = await this.repository.claim(accountId, key, fingerprint, this.config.ttlHours);
      if (token) return { kind: 'claimed', token };
      const record = await this.repository.find(accountId, key);
      if (record && !record.requestHash.equals(fingerprint)) throw CommonErrors.idempotencyKeyReused();
      if (record?.state === 'completed') return { kind: 'replay', body: record.responseBody };
      if (Date.now() > deadline) throw CommonErrors.idempotencyKeyInProgress();
      if (record) await sleep(POLL_INTERVAL_MS);
    }
  }
}
