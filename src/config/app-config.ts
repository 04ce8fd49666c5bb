import { accessSync, constants } from 'node:fs';
import { isIP } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The service's whole configuration, read from the environment once at boot.
 *
 * `loadConfig` checks every variable and throws one error that names each bad one, so an operator
 * fixes a broken deployment in one pass. Nothing else in the code reads `process.env`.
 */
/** The project root, from `src/config` (tests) or `dist/config` (built) alike. */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export type NodeEnv = 'development' | 'production' | 'test';
export type Role = 'all' | 'api' | 'worker';

export interface RateLimits {
  /** Requests per window for each authentication tier. */
  anonymous: number;
  apiKey: number;
  oauth: number;
  session: number;
  windowSeconds: number;
  /** Requests per client network to the public routes that do work: signing in, the OAuth endpoints. */
  authEndpoints: number;
  authEndpointsWindowSeconds: number;
}

/** Webhook delivery (docs/webhooks.md). */
export interface WebhooksConfig {
  /** How long a rotated secret keeps signing beside the new one. */
  secretGraceHours: number;
  /** How long an attempt waits for the receiver's answer. */
  timeoutMs: number;
  /** The waits before each retry of a delivery that failed for a reason that may pass. */
  retryDelaysSeconds: number[];
  /** Deliver to private and loopback addresses (a receiver on the same network; never on the Internet). */
  allowPrivate: boolean;
  /** Deliveries per webhook and hour; more wait for the next hour. */
  hourlyLimit: number;
  /** Deliveries in 24 hours before a webhook failing more than 80% of them is disabled. */
  disableAfterDeliveries: number;
  retentionDays: number;
  /** Deliveries one worker process sends at once. */
  concurrency: number;
  /** How often a worker looks for new events in the outbox. */
  dispatchIntervalMs: number;
  /** How often a worker looks for due deliveries whose job was lost (Redis down, a process killed). */
  sweepSeconds: number;
}

export interface AppConfig {
  nodeEnv: NodeEnv;
  role: Role;
  port: number;
  databaseUrl: string;
  /** Connections of the main pool (every statement but searches'), per process. */
  databasePoolSize: number;
  /** How long the first connection at start-up may take before the process gives up, saying why. */
  databaseConnectTimeoutMs: number;
  redisUrl: string;
  /** Prefix for every Redis key this process writes (rate limits, queues), so tenants of one Redis never collide. */
  redisPrefix: string;
  forceHttps: boolean;
  /** Express `trust proxy` value: hops or a list of addresses whose X-Forwarded-* headers are believed. */
  trustProxy: string | number | false;
  /** Where plain-HTTP requests are redirected, e.g. https://api.example.com; else the request's own host. */
  publicBaseUrl: string | null;
  tls: { certFile: string; keyFile: string; httpRedirectPort: number | null } | null;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** LOG_FORMAT; null: readable lines in development on a terminal, JSON lines otherwise (see logger.ts). */
  logFormat: 'json' | 'pretty' | null;
  rateLimits: RateLimits;
  /** How long a verified API key is trusted without reading it again (0: read on every request). */
  apiKeyCacheSeconds: number;
  sessions: {
    /** A session unused for this long ends. */
    idleSeconds: number;
    /** A session ends this long after sign-in, however active. */
    lifetimeSeconds: number;
    /** `__Host-svc_session` with `Secure`; false only outside production without HTTPS. */
    secureCookie: boolean;
  };
  /** Origins whose pages may send cookie-authenticated writes; null: the service's own origin only. */
  webOrigins: string[] | null;
  /** Browser origins allowed to call the MCP endpoint besides the service's own (DNS-rebinding defence). */
  mcpOrigins: string[];
  webhooks: WebhooksConfig;
  /** Sign-in attempts allowed per client address and per email in each window, before 429. */
  signIn: { maxAttempts: number; windowSeconds: number };
  /** OAuth client registrations allowed per client address and hour (RFC 7591 is open to anyone). */
  oauthRegistrationsPerHour: number;
  idempotencyTtlHours: number;
  /** Largest JSON body accepted, in bytes. */
  jsonBodyLimitBytes: number;
  /** How long the HTTP listeners wait for a client (docs/decisions.md, Transport). */
  http: HttpLimits;
  /** How long shutdown waits for the requests under way (see InFlightRequests). */
  shutdownGraceMs: number;
  migrateOnBoot: boolean;
  embedding: EmbeddingConfig;
  ingestion: IngestionConfig;
  ocr: { workers: number; maxPixels: number };
  search: {
    bm25K1: number;
    bm25B: number;
    timeoutMs: number;
    batchConcurrency: number;
    /** Memory for term postings kept by the keyword leg, in MiB (0: none kept). */
    postingsCacheMiB: number;
    /** Connections of the search pool (see SearchPool), beside the main pool's. */
    poolSize: number;
    /** Postings of the most frequent terms read into memory at start-up, in MiB (0: none). */
    postingsWarmMiB: number;
    /** The largest dataset the vector leg may scan exactly (see `scansExactly`); larger ones use HNSW. */
    exactScanMaxChunks: number;
    /**
     * Chunks from which a dataset gets an HNSW index of its own, built by a worker (0: none does);
     * by default every dataset larger than what is scanned exactly.
     */
    datasetIndexMinChunks: number;
    /** `maintenance_work_mem` of a dataset index's build, in MiB: the graph it can build in memory. */
    datasetIndexBuildMiB: number;
    /**
     * Calibration points (cosine, relevance) by embedding model, `*` for any model without its own,
     * over the built-in ones (`SEMANTIC_CALIBRATIONS`).
     */
    semanticCalibrations: Record<string, [number, number][]>;
  };
  rerank: {
    provider: 'none' | 'local' | 'http';
    model: string;
    baseUrl: string | null;
    apiKey: string | null;
    candidates: number;
  };
}

/** The bounds on how long a client may take to send a request, for every listener the app opens. */
export interface HttpLimits {
  /** From a request's first byte until its headers are complete (also a new connection's first request). */
  headersTimeoutMs: number;
  /** From a request's first byte until its whole body is received. */
  requestTimeoutMs: number;
  /** How long an idle kept-alive connection waits for its next request. */
  keepAliveTimeoutMs: number;
}

export type EmbeddingProviderName = 'auto' | 'local' | 'openai' | 'none';

export interface EmbeddingConfig {
  provider: EmbeddingProviderName;
  /** Model id; null picks the provider's default. */
  model: string | null;
  /** Requested output dimensions (OpenAI models that support shortening); null keeps the model's own. */
  dimensions: number | null;
  modelsDir: string;
  /** Fetch a missing local model from the hub (see model-download.ts): on by default outside tests and CI. */
  allowDownload: boolean;
  /** The model hub, laid out as Hugging Face's: `<hub>/<model>/resolve/<revision>/<file>`. */
  hubUrl: string;
  openaiApiKey: string | null;
  openaiBaseUrl: string | null;
  batchSize: number;
}

export interface IngestionConfig {
  /** Documents one worker process handles at once. */
  concurrency: number;
  chunkTokens: number;
  chunkOverlapTokens: number;
  /** A processing document whose job has not reported for this long is looked at by the recovery sweep. */
  staleAfterSeconds: number;
  /** Times a document is started again after its worker died, before it fails with processing_error. */
  maxRecoveries: number;
  /** A job whose worker stops renewing its lock for this long is taken back by the queue (Bull lockDuration). */
  lockSeconds: number;
  /** A file's extraction running longer than this fails its document (extraction_limit_exceeded). */
  extractionTimeoutSeconds: number;
  /** The heap of an extraction thread; a file that needs more fails its document (extraction_limit_exceeded). */
  extractionMemoryMiB: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Reads typed values from the environment and remembers every problem instead of stopping at the first. */
class EnvReader {
  readonly problems: string[] = [];

  constructor(private readonly env: Env) {}

  string(name: string, fallback?: string): string {
    const value = this.raw(name) ?? fallback;
    if (value === undefined) {
      this.problems.push(`${name} is required`);
      return '';
    }
    return value;
  }

  optional(name: string): string | undefined {
    return this.raw(name);
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!/^-?\d+$/.test(value) || parsed < min || parsed > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max}, got "${value}"`);
      return fallback;
    }
    return parsed;
  }

  number(name: string, fallback: number, min: number, max: number): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < min || parsed > max) {
      this.problems.push(`${name} must be a number from ${min} to ${max}, got "${value}"`);
      return fallback;
    }
    return parsed;
  }

  bool(name: string, fallback: boolean): boolean {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (/^(true|1|yes)$/i.test(value)) return true;
    if (/^(false|0|no)$/i.test(value)) return false;
    this.problems.push(`${name} must be true or false, got "${value}"`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if ((allowed as readonly string[]).includes(value)) return value as T;
    this.problems.push(`${name} must be one of ${allowed.join(', ')}, got "${value}"`);
    return fallback;
  }

  url(name: string, protocols: string[], fallback: string): string {
    const value = this.raw(name) ?? fallback;
    try {
      const parsed = new URL(value);
      if (!protocols.includes(parsed.protocol)) throw new Error('protocol');
    } catch {
      this.problems.push(
        `${name} must be a URL with scheme ${protocols.join(' or ')}, got "${redactUrl(value)}"`,
      );
    }
    return value;
  }

  private raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }
}

/**
 * A JSON object of calibration lists by model name: each a list of at least two [cosine, relevance]
 * points, cosine ascending within -1..1, relevance within 0..1 and never descending.
 */
function calibrations(read: EnvReader, name: string): Record<string, [number, number][]> {
  const value = read.optional(name);
  if (value === undefined) return {};
  const problem = (issue: string) => {
    read.problems.push(`${name} ${issue}`);
    return {};
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    // not JSON: refused below, as any other value that is not an object
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return problem('must be a JSON object of model name to [[cosine, relevance], ...]');
  for (const [model, points] of Object.entries(parsed)) {
    const issue = calibrationIssue(points);
    if (issue) return problem(`["${model}"] ${issue}`);
  }
  return parsed as Record<string, [number, number][]>;
}

function calibrationIssue(points: unknown): string | null {
  if (!Array.isArray(points) || points.length < 2)
    return 'must be a list of at least two [cosine, relevance] points';
  let previous: number[] | undefined;
  for (const [i, point] of points.entries()) {
    if (!Array.isArray(point) || point.length !== 2 || !point.every((n) => typeof n === 'number'))
      return `point ${i} must be [cosine, relevance], two numbers`;
    const [x, y] = point;
    if (x < -1 || x > 1 || y < 0 || y > 1)
      return `point ${i} must have a cosine in -1..1 and a relevance in 0..1`;
    if (previous && (x <= previous[0] || y < previous[1]))
      return `point ${i} must follow point ${i - 1}: cosine ascending, relevance not descending`;
    previous = point;
  }
  return null;
}

/** Hides the password of a connection URL so that it can be printed in an error. */
export function redactUrl(value: string): string {
  try {
    const parsed = new URL(value);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return value;
  }
}

/** Names Express's `trust proxy` takes for address ranges (proxy-addr's presets). */
const PROXY_PRESETS = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, or a subnet as address/prefix length or address/netmask, as proxy-addr reads them. */
function isProxyAddress(entry: string): boolean {
  const [address, range, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (range === undefined) return true;
  if (/^\d{1,3}$/.test(range)) return Number(range) <= (family === 4 ? 32 : 128);
  return family === 4 && isIP(range) === 4;
}

/**
 * `true` is refused: Express would then trust every X-Forwarded-For entry, and the client address
 * that anonymous rate limits count by would be whatever the client writes there.
 */
function parseTrustProxy(read: EnvReader): string | number | false {
  const value = read.optional('TRUST_PROXY');
  if (value === undefined || /^false$/i.test(value)) return false;
  if (/^\d+$/.test(value)) return Number(value);
  if (/^true$/i.test(value)) {
    read.problems.push('TRUST_PROXY must be a hop count (e.g. 1) or a list of proxy addresses, not "true"');
    return false;
  }
  const bad = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => !PROXY_PRESETS.has(entry) && !isProxyAddress(entry));
  if (bad.length > 0) {
    read.problems.push(
      `TRUST_PROXY must be a hop count or a comma-separated list of addresses, subnets (10.0.0.0/8) and ` +
        `loopback, linklocal or uniquelocal; ${bad.map((entry) => JSON.stringify(entry)).join(', ')} is not one`,
    );
    return false;
  }
  return value;
}

/** Comma-separated whole seconds, such as `60,300,1800`: the waits before each retry. */
function parseDelays(read: EnvReader, name: string, fallback: number[]): number[] {
  const value = read.optional(name);
  if (value === undefined) return fallback;
  const delays = value.split(',').map((entry) => Number(entry.trim()));
  if (
    delays.length === 0 ||
    delays.length > 10 ||
    !delays.every((d) => Number.isInteger(d) && d >= 0 && d <= 86_400)
  ) {
    read.problems.push(
      `${name} must be up to 10 comma-separated whole seconds (0-86400), such as 60,300,1800`,
    );
    return fallback;
  }
  return delays;
}

/** A comma-separated list of origins (`https://app.example.com`, no path), or null when unset. */
function parseOrigins(read: EnvReader, name: string): string[] | null {
  const value = read.optional(name);
  if (value === undefined) return null;
  const origins = value.split(',').map((entry) => entry.trim());
  const bad = origins.filter((origin) => {
    try {
      const url = new URL(origin);
      return !['http:', 'https:'].includes(url.protocol) || url.origin !== origin;
    } catch {
      return true;
    }
  });
  if (bad.length > 0) {
    read.problems.push(
      `${name} must be a comma-separated list of origins such as https://app.example.com (scheme, host and ` +
        `port only); ${bad.map((entry) => JSON.stringify(entry)).join(', ')} is not one`,
    );
  }
  return origins;
}

/** Settings that are each valid alone but not together, or that name a file that is not there. */
function checkCombinations(config: AppConfig, read: EnvReader, httpRedirectPort: number): void {
  if (config.rerank.provider === 'http' && !config.rerank.baseUrl) {
    read.problems.push('RERANK_PROVIDER=http needs RERANK_BASE_URL');
  }
  if (config.rerank.provider === 'http' && !read.optional('RERANK_MODEL')) {
    // The default names the local cross-encoder, which no rerank API knows: every search would fail.
    read.problems.push('RERANK_PROVIDER=http needs RERANK_MODEL, a model name the rerank API accepts');
  }
  if (config.embedding.provider === 'openai' && !config.embedding.openaiApiKey) {
    read.problems.push('EMBEDDING_PROVIDER=openai needs OPENAI_API_KEY');
  }
  if (config.http.headersTimeoutMs > config.http.requestTimeoutMs) {
    // Node.js refuses this pair: the headers are part of the request.
    read.problems.push('HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS');
  }
  if (httpRedirectPort && !config.tls) {
    read.problems.push(
      'HTTP_REDIRECT_PORT needs TLS_CERT_FILE and TLS_KEY_FILE (behind a TLS proxy, use FORCE_HTTPS)',
    );
  }
  if (config.nodeEnv === 'production' && !config.publicBaseUrl) {
    // Else the OAuth issuer, the resources tokens are for, and the links in responses come from each
    // request's Host header, which a client chooses (and a cache may keep for others).
    read.problems.push(
      'PUBLIC_BASE_URL is required in production: the https:// address clients reach the service at',
    );
  }
  for (const [name, file] of [
    ['TLS_CERT_FILE', config.tls?.certFile],
    ['TLS_KEY_FILE', config.tls?.keyFile],
  ] as const) {
    if (!file) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch {
      read.problems.push(`${name} must name a readable file; ${JSON.stringify(file)} is not one`);
    }
  }
}

/**
 * `PUBLIC_BASE_URL`, without a trailing slash: HTTPS, or plain HTTP on a loopback host (a service used
 * on one machine, as with `docker compose up`), with nothing but a scheme, a host and a path.
 */
function publicBaseUrl(read: EnvReader): string {
  const value = read.url('PUBLIC_BASE_URL', ['https:', 'http:'], '').replace(/\/+$/, '');
  const url = URL.parse(value);
  if (!url) return value;
  if (url.protocol === 'http:' && !['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)) {
    read.problems.push('PUBLIC_BASE_URL must use https (plain http only on localhost, 127.0.0.1 or [::1])');
  }
  if (url.username || url.password || url.search || url.hash) {
    read.problems.push(
      'PUBLIC_BASE_URL must be a scheme, a host and a path, with no credentials, query or fragment',
    );
  }
  return value;
}

/** CI services set `CI` (true, 1, a name); `false`, `0` or `no` says it is not one. */
function runsInCi(read: EnvReader): boolean {
  const value = read.optional('CI');
  return value !== undefined && !/^(false|0|no)$/i.test(value);
}

export function loadConfig(env: Env = process.env): AppConfig {
  const read = new EnvReader(env);
  const nodeEnv = read.oneOf('NODE_ENV', ['development', 'production', 'test'] as const, 'development');

  const certFile = read.optional('TLS_CERT_FILE');
  const keyFile = read.optional('TLS_KEY_FILE');
  if (Boolean(certFile) !== Boolean(keyFile)) {
    read.problems.push('TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  }
  const httpRedirectPort = read.int('HTTP_REDIRECT_PORT', 0, 0, 65535);
  const exactScanMaxChunks = read.int('SEARCH_EXACT_SCAN_MAX_CHUNKS', 20_000, 0, 10_000_000);

  const config: AppConfig = {
    nodeEnv,
    role: read.oneOf('ROLE', ['all', 'api', 'worker'] as const, 'all'),
    port: read.int('PORT', 3000, 0, 65535),
    databaseUrl: read.url(
      'DATABASE_URL',
      ['postgres:', 'postgresql:'],
      'postgres://postgres@127.0.0.1:5432/dataset_search',
    ),
    databasePoolSize: read.int('DATABASE_POOL_SIZE', 20, 1, 500),
    databaseConnectTimeoutMs: read.int('DATABASE_CONNECT_TIMEOUT_MS', 5_000, 100, 120_000),
    redisUrl: read.url('REDIS_URL', ['redis:', 'rediss:'], 'redis://127.0.0.1:6379'),
    redisPrefix: read.string('REDIS_PREFIX', 'dss'),
    forceHttps: read.bool('FORCE_HTTPS', nodeEnv === 'production'),
    trustProxy: parseTrustProxy(read),
    publicBaseUrl: read.optional('PUBLIC_BASE_URL') ? publicBaseUrl(read) : null,
    tls: certFile && keyFile ? { certFile, keyFile, httpRedirectPort: httpRedirectPort || null } : null,
    logLevel: read.oneOf(
      'LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
      nodeEnv === 'test' ? 'silent' : 'info',
    ),
    logFormat: read.optional('LOG_FORMAT')
      ? read.oneOf('LOG_FORMAT', ['json', 'pretty'] as const, 'json')
      : null,
    rateLimits: {
      anonymous: read.int('RATE_LIMIT_ANONYMOUS', 50, 1, 10_000_000),
      apiKey: read.int('RATE_LIMIT_API_KEY', 1_000, 1, 10_000_000),
      oauth: read.int('RATE_LIMIT_OAUTH', 15_000, 1, 10_000_000),
      session: read.int('RATE_LIMIT_SESSION', 15_000, 1, 10_000_000),
      windowSeconds: read.int('RATE_LIMIT_WINDOW_SECONDS', 3_600, 1, 86_400),
      authEndpoints: read.int('RATE_LIMIT_AUTH_ENDPOINTS', 60, 1, 10_000_000),
      authEndpointsWindowSeconds: read.int('RATE_LIMIT_AUTH_WINDOW_SECONDS', 60, 1, 86_400),
    },
    apiKeyCacheSeconds: read.int('API_KEY_CACHE_SECONDS', 60, 0, 3_600),
    sessions: {
      idleSeconds: read.int('SESSION_IDLE_SECONDS', 12 * 3_600, 60, 30 * 86_400),
      lifetimeSeconds: read.int('SESSION_LIFETIME_SECONDS', 7 * 86_400, 60, 365 * 86_400),
      secureCookie: false, // decided below, from how the service is reached
    },
    webOrigins: parseOrigins(read, 'WEB_ORIGINS'),
    mcpOrigins: parseOrigins(read, 'MCP_ORIGINS') ?? [],
    webhooks: {
      secretGraceHours: read.int('WEBHOOK_SECRET_GRACE_HOURS', 24, 0, 24 * 30),
      timeoutMs: read.int('WEBHOOK_TIMEOUT_MS', 5_000, 100, 60_000),
      retryDelaysSeconds: parseDelays(read, 'WEBHOOK_RETRY_DELAYS_SECONDS', [60, 300, 1_800]),
      allowPrivate: read.bool('WEBHOOK_ALLOW_PRIVATE', false),
      hourlyLimit: read.int('WEBHOOK_HOURLY_LIMIT', 1_000, 1, 1_000_000),
      disableAfterDeliveries: read.int('WEBHOOK_DISABLE_AFTER_DELIVERIES', 20, 1, 1_000_000),
      retentionDays: read.int('WEBHOOK_RETENTION_DAYS', 30, 1, 3_650),
      concurrency: read.int('WEBHOOK_CONCURRENCY', 8, 1, 256),
      dispatchIntervalMs: read.int('WEBHOOK_DISPATCH_INTERVAL_MS', 500, 10, 60_000),
      sweepSeconds: read.int('WEBHOOK_SWEEP_SECONDS', 10, 1, 3_600),
    },
    signIn: {
      maxAttempts: read.int('SIGN_IN_MAX_ATTEMPTS', 10, 1, 10_000),
      windowSeconds: read.int('SIGN_IN_WINDOW_SECONDS', 15 * 60, 1, 86_400),
    },
    oauthRegistrationsPerHour: read.int('OAUTH_REGISTRATIONS_PER_HOUR', 20, 1, 1_000_000),
    idempotencyTtlHours: read.int('IDEMPOTENCY_TTL_HOURS', 24, 1, 24 * 30),
    // 1,000,000 characters of content, each written as a \uXXXX surrogate pair (12 bytes), plus metadata.
    jsonBodyLimitBytes: read.int('JSON_BODY_LIMIT_BYTES', 16 * 1024 * 1024, 1024, 64 * 1024 * 1024),
    shutdownGraceMs: read.int('SHUTDOWN_GRACE_SECONDS', 20, 0, 600) * 1000,
    http: {
      headersTimeoutMs: read.int('HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 600_000),
      // An upload of 10 MB (the file limit) fits at 0.5 Mbit/s, a JSON body of 16 MiB (the default
      // JSON_BODY_LIMIT_BYTES) at 0.75 Mbit/s: a slow link, not a stalled one.
      requestTimeoutMs: read.int('HTTP_REQUEST_TIMEOUT_MS', 180_000, 100, 3_600_000),
      keepAliveTimeoutMs: read.int('HTTP_KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
    },
    migrateOnBoot: read.bool('MIGRATE_ON_BOOT', true),
    embedding: {
      provider: read.oneOf('EMBEDDING_PROVIDER', ['auto', 'local', 'openai', 'none'] as const, 'auto'),
      model: read.optional('EMBEDDING_MODEL') ?? null,
      dimensions: read.optional('EMBEDDING_DIMENSIONS')
        ? read.int('EMBEDDING_DIMENSIONS', 0, 1, 16_000)
        : null,
      modelsDir: read.string('MODELS_DIR', join(PROJECT_ROOT, '.cache', 'models')),
      // A first start gets the model as Chroma's and fastembed's do; tests and CI never reach the hub
      // unless they ask (a test pointing MODEL_HUB_URL at a fake hub).
      allowDownload: read.bool('EMBEDDING_ALLOW_DOWNLOAD', nodeEnv !== 'test' && !runsInCi(read)),
      hubUrl: read.url('MODEL_HUB_URL', ['http:', 'https:'], 'https://huggingface.co').replace(/\/+$/, ''),
      openaiApiKey: read.optional('OPENAI_API_KEY') ?? null,
      openaiBaseUrl: read.optional('OPENAI_BASE_URL')
        ? read.url('OPENAI_BASE_URL', ['http:', 'https:'], '')
        : null,
      batchSize: read.int('EMBEDDING_BATCH_SIZE', 16, 1, 2048),
    },
    ingestion: {
      concurrency: read.int('INGEST_CONCURRENCY', 2, 1, 64),
      chunkTokens: read.int('CHUNK_TOKENS', 512, 16, 8192),
      chunkOverlapTokens: read.int('CHUNK_OVERLAP_TOKENS', 32, 0, 1024),
      staleAfterSeconds: read.int('INGEST_STALE_AFTER_SECONDS', 120, 5, 86_400),
      maxRecoveries: read.int('INGEST_MAX_RECOVERIES', 3, 0, 100),
      lockSeconds: read.int('QUEUE_LOCK_SECONDS', 30, 2, 3_600),
      extractionTimeoutSeconds: read.int('EXTRACTION_TIMEOUT_SECONDS', 120, 1, 3_600),
      extractionMemoryMiB: read.int('EXTRACTION_MEMORY_MB', 2_048, 64, 65_536),
    },
    search: {
      bm25K1: read.number('BM25_K1', 1.2, 0, 10),
      bm25B: read.number('BM25_B', 0.6, 0, 1),
      timeoutMs: read.int('SEARCH_TIMEOUT_MS', 10_000, 1, 60_000),
      batchConcurrency: read.int('SEARCH_BATCH_CONCURRENCY', 4, 1, 10),
      postingsCacheMiB: read.int('SEARCH_POSTINGS_CACHE_MB', 256, 0, 65_536),
      poolSize: read.int('SEARCH_DB_POOL_SIZE', 10, 1, 200),
      postingsWarmMiB: read.int('SEARCH_POSTINGS_WARM_MB', 64, 0, 65_536),
      exactScanMaxChunks,
      datasetIndexMinChunks: read.int('SEARCH_DATASET_INDEX_MIN_CHUNKS', exactScanMaxChunks, 0, 10_000_000),
      datasetIndexBuildMiB: read.int('SEARCH_DATASET_INDEX_BUILD_MB', 512, 64, 1_048_576),
      semanticCalibrations: calibrations(read, 'SEMANTIC_CALIBRATION'),
    },
    rerank: {
      provider: read.oneOf('RERANK_PROVIDER', ['none', 'local', 'http'] as const, 'none'),
      model: read.string('RERANK_MODEL', 'Xenova/ms-marco-MiniLM-L-6-v2'),
      baseUrl: read.optional('RERANK_BASE_URL') ? read.url('RERANK_BASE_URL', ['http:', 'https:'], '') : null,
      apiKey: read.optional('RERANK_API_KEY') ?? null,
      candidates: read.int('RERANK_CANDIDATES', 20, 1, 200),
    },
    ocr: {
      workers: read.int('OCR_WORKERS', 0, 0, 64),
      maxPixels: read.int('OCR_MAX_PIXELS', 40_000_000, 1, 1_000_000_000),
    },
  };

  config.sessions.secureCookie =
    nodeEnv === 'production' ||
    config.forceHttps ||
    config.tls !== null ||
    config.publicBaseUrl?.startsWith('https:') === true;
  checkCombinations(config, read, httpRedirectPort);
  if (read.problems.length > 0) throw new ConfigError(read.problems);
  return config;
}

/** Injection token for the loaded configuration. */
export const APP_CONFIG = Symbol('APP_CONFIG');
