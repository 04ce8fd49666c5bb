import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { CoreConfig } from 'src/config/core.config.js';
import type { WebhooksConfig } from 'src/modules/webhooks/webhooks.config.js';
import { type AddressPolicy, checkedAddress } from 'src/modules/webhooks/delivery/safe-address.js';
import { signDelivery } from 'src/modules/webhooks/delivery/signatures.js';

/** The most of a receiver's answer kept for the delivery log. */
export const RESPONSE_BYTES_KEPT = 1_024;

export interface SendResult {
  /** The receiver's status, or null when none came (refused address, no connection, timeout). */
  statusCode: number | null;
  durationMs: number;
  /** Why no status came, or what the status means, in a line. */
  error: string | null;
  /** The start of the answer's body, up to `RESPONSE_BYTES_KEPT` bytes. */
  responseBody: string | null;
}

/** The headers of one attempt: the contract's, and the signatures of every secret still signing. */
export function deliveryHeaders(
  attempt: { event: string; eventId: string; body: string; secrets: readonly string[]; attemptId: string },
  at: Date = new Date(),
): Record<string, string> {
  return {
    'Content-Type': 'application/json',
    'User-Agent': 'SERVICE-Webhooks/1.0',
    'X-SERVICE-Event': attempt.event,
    'X-SERVICE-Delivery': attempt.attemptId,
    ...signDelivery(attempt.eventId, attempt.body, attempt.secrets, at),
  };
}

/** Where deliveries may connect (docs/webhooks.md, SSRF): loopback only outside production. */
export function deliveryPolicy(
  core: Pick<CoreConfig, 'nodeEnv'>,
  webhooks: Pick<WebhooksConfig, 'allowPrivate'>,
): AddressPolicy {
  return { allowLoopback: core.nodeEnv !== 'production', allowPrivate: webhooks.allowPrivate };
}

/** What an attempt's answer means, as the contract's table has it. */
export function outcomeOf(result: SendResult): 'delivered' | 'retry' | 'failed' {
  const status = result.statusCode;
  if (status !== null && status >= 200 && status < 300) return 'delivered';
  // 4xx: the receiver refuses it, and will again; 3xx: redirects are not followed, so the same.
  if (status !== null && status < 500) return 'failed';
  return 'retry'; // 5xx, a timeout, no connection, a refused address
}

/**
 * POSTs one delivery and reports how it went; never throws. The host is resolved and checked first
 * (`checkedAddress`), and the connection is made to that address alone. Redirects are not followed
 * (a 3xx is an answer like any other); the answer's body is read up to 1 KB, then the connection is
 * dropped; the whole exchange has `timeoutMs`.
 */
export async function sendDelivery(
  url: string,
  body: string,
  headers: Record<string, string>,
  { timeoutMs, policy }: { timeoutMs: number; policy: AddressPolicy },
): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const target = new URL(url);
  // The lookup is within the attempt's time too: a name whose DNS never answers must not hold it.
  let lookupTimer: NodeJS.Timeout | undefined;
  const resolved = await Promise.race([
    checkedAddress(target.hostname, policy),
    new Promise<{ issue: string }>((resolve) => {
      lookupTimer = setTimeout(
        () => resolve({ issue: `${target.hostname} did not resolve within ${timeoutMs} ms` }),
        timeoutMs,
      );
    }),
  ]).finally(() => clearTimeout(lookupTimer));
  if ('issue' in resolved) {
    return {
      statusCode: null,
      durationMs: elapsed(),
      error: `refused: ${resolved.issue}`,
      responseBody: null,
    };
  }
  // The checked address, whatever the name would resolve to now.
  const lookup: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) callback(null, [resolved]);
    else callback(null, resolved.address, resolved.family);
  };
  const client = target.protocol === 'https:' ? https : http;
  return new Promise<SendResult>((resolve) => {
    let settled = false;
    const settle = (result: Omit<SendResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve({ ...result, durationMs: elapsed() });
    };
    const request = client.request(
      target,
      {
        method: 'POST',
        lookup,
        headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        const done = () => {
          const status = response.statusCode ?? 0;
          settle({
            statusCode: status,
            error: status >= 200 && status < 300 ? null : `the receiver answered ${status}`,
            // As text the log can hold: PostgreSQL's text refuses U+0000, which a binary answer has.
            responseBody: Buffer.concat(chunks)
              .subarray(0, RESPONSE_BYTES_KEPT)
              .toString('utf8')
              .replaceAll('\u0000', '\ufffd'),
          });
        };
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          kept += chunk.length;
          if (kept >= RESPONSE_BYTES_KEPT) done();
        });
        response.on('end', done);
        response.on('error', done);
      },
    );
    const timer = setTimeout(
      () => settle({ statusCode: null, error: `no answer within ${timeoutMs} ms`, responseBody: null }),
      Math.max(1, timeoutMs - elapsed()),
    );
    request.on('error', (err: NodeJS.ErrnoException) =>
      settle({
        statusCode: null,
        error: `connection failed: ${err.code ?? err.message}`,
        responseBody: null,
      }),
    );
    request.end(body);
  });
}
