import { type ConfigOf, int, section } from 'src/config/define.js';

/** How long the HTTP listeners wait for a client (docs/decisions.md, Transport), and the JSON body limit. */
export const httpSection = section('HTTP_CONFIG', {
  title: 'HTTP',
  variables: {
    /** From a request's first byte until its headers are complete (also a new connection's first request). */
    headersTimeoutMs: int('HTTP_HEADERS_TIMEOUT_MS', {
      default: 10_000,
      min: 100,
      max: 600_000,
      description:
        "how long a client may take to send a request's headers (a new connection's first bytes included); " +
        'then 408 `request_timeout` and the connection closes',
    }),
    /** From a request's first byte until its whole body is received. */
    requestTimeoutMs: int('HTTP_REQUEST_TIMEOUT_MS', {
      // An upload of 10 MB (the file limit) fits at 0.5 Mbit/s, a JSON body of 16 MiB (the default
      // JSON_BODY_LIMIT_BYTES) at 0.75 Mbit/s: a slow link, not a stalled one.
      default: 180_000,
      min: 100,
      max: 3_600_000,
      description:
        'how long a client may take to send a whole request, body included (a 10 MB upload fits at ' +
        '0.5 Mbit/s); at least `HTTP_HEADERS_TIMEOUT_MS`. It bounds receiving only: a slow answer is not cut',
    }),
    /** How long an idle kept-alive connection waits for its next request. */
    keepAliveTimeoutMs: int('HTTP_KEEP_ALIVE_TIMEOUT_MS', {
      default: 5_000,
      min: 100,
      max: 600_000,
      description:
        'how long an idle kept-alive connection waits for its next request; behind a load balancer, longer ' +
        "than the balancer's own idle timeout (docs/decisions.md, Transport)",
    }),
    jsonBodyLimitBytes: int('JSON_BODY_LIMIT_BYTES', {
      // 1,000,000 characters of content, each written as a \uXXXX surrogate pair (12 bytes), plus metadata.
      default: 16 * 1024 * 1024,
      min: 1024,
      max: 64 * 1024 * 1024,
      description:
        'largest JSON body; larger ones are refused (413) without being buffered. The default takes the ' +
        'largest text upload (1,000,000 characters) however its JSON is escaped',
    }),
  },
  check: (config, reading) => {
    if (config.headersTimeoutMs > config.requestTimeoutMs) {
      // Node.js refuses this pair: the headers are part of the request.
      reading.problem('HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS');
    }
  },
});

export const HTTP_CONFIG = httpSection.token;
export type HttpConfig = ConfigOf<typeof httpSection>;
/** The bounds on how long a client may take to send a request, for every listener the app opens. */
export type HttpLimits = Pick<HttpConfig, 'headersTimeoutMs' | 'requestTimeoutMs' | 'keepAliveTimeoutMs'>;
