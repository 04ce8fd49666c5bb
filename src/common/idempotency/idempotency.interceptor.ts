import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type CallHandler,
  type ExecutionContext,
  HttpStatus,
  Inject,
  Injectable,
  type NestInterceptor,
  RequestMethod,
} from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants.js';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { catchError, from, mergeMap, type Observable, of, throwError } from 'rxjs';
import { CommonErrors } from 'src/common/errors/app-error.js';
import { IdempotencyRepository } from 'src/common/idempotency/idempotency.repository.js';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';

type Acquired = { kind: 'claimed' } | { kind: 'replay'; status: number; body: unknown };

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

/** What identifies "the same request": method, path, body, and the bytes of an uploaded file. */
export function requestFingerprint(request: Request): Buffer {
  const hash = createHash('sha256').update(`${request.method} ${request.originalUrl}\n`);
  hash.update(canonicalJson(request.body ?? null));
  const file = (request as Request & { file?: { buffer?: Buffer } }).file;
  if (file?.buffer) hash.update('\n').update(file.buffer);
  return hash.digest();
}

/**
 * `Idempotency-Key` for creating POSTs: the first request with a key runs and its successful response is
 * stored for the configured time (24 h by default); a repeat with the same request replays it with
 * `Idempotent-Replayed: true` and creates nothing; a repeat with another request is 422
 * idempotency_key_reused. Keys are scoped per account. A request that fails releases its key.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly repository: IdempotencyRepository,
    private readonly reflector: Reflector,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const request = context.switchToHttp().getRequest<Request>();
    const response = context.switchToHttp().getResponse<Response>();
    const key = request.headers[IDEMPOTENCY_HEADER];
    const accountId = request.principal?.accountId;
    if (key === undefined || !accountId) return next.handle();
    if (typeof key !== 'string' || !KEY_PATTERN.test(key)) throw CommonErrors.idempotencyKeyInvalid();

    const outcome = await this.acquire(accountId, key, requestFingerprint(request));
    if (outcome.kind === 'replay') {
      response.setHeader(REPLAYED_HEADER, 'true');
      response.status(outcome.status);
      return of(outcome.body);
    }

    const status = this.successStatus(context);
    return next.handle().pipe(
      mergeMap((body: unknown) =>
        from(this.repository.complete(accountId, key, status, body ?? null).then(() => body)),
      ),
      catchError((error: unknown) =>
        from(this.repository.release(accountId, key)).pipe(mergeMap(() => throwError(() => error))),
      ),
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
      if (await this.repository.claim(accountId, key, fingerprint, this.config.idempotencyTtlHours)) {
        return { kind: 'claimed' };
      }
      const record = await this.repository.find(accountId, key);
      if (record && !record.requestHash.equals(fingerprint)) throw CommonErrors.idempotencyKeyReused();
      if (record?.state === 'completed') {
        return { kind: 'replay', status: record.responseStatus ?? HttpStatus.OK, body: record.responseBody };
      }
      if (Date.now() > deadline) throw CommonErrors.idempotencyKeyInProgress();
      if (record) await sleep(POLL_INTERVAL_MS);
    }
  }

  private successStatus(context: ExecutionContext): number {
    const declared = this.reflector.get<number | undefined>(HTTP_CODE_METADATA, context.getHandler());
    const method = context.switchToHttp().getRequest<Request>().method;
    return declared ?? (method === RequestMethod[RequestMethod.POST] ? HttpStatus.CREATED : HttpStatus.OK);
  }
}
