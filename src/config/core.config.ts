import { accessSync, constants } from 'node:fs';
import { isIP } from 'node:net';
import {
  bool,
  checkUrl,
  type ConfigOf,
  custom,
  int,
  oneOf,
  type Reading,
  section,
  string,
} from 'src/config/define.js';

/** The process's own settings: what it runs as, where it listens, how it is reached. */

export const NODE_ENV = oneOf('NODE_ENV', ['development', 'production', 'test'], {
  default: 'development',
  description: '`development`, `production` or `test`',
});

export type NodeEnv = ConfigOf<typeof coreSection>['nodeEnv'];
export type Role = ConfigOf<typeof coreSection>['role'];

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
function parseTrustProxy(value: string | undefined, reading: Reading): string | number | false {
  if (value === undefined || /^false$/i.test(value)) return false;
  if (/^\d+$/.test(value)) return Number(value);
  if (/^true$/i.test(value)) {
    reading.problem('TRUST_PROXY must be a hop count (e.g. 1) or a list of proxy addresses, not "true"');
    return false;
  }
  const bad = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => !PROXY_PRESETS.has(entry) && !isProxyAddress(entry));
  if (bad.length > 0) {
    reading.problem(
      `TRUST_PROXY must be a hop count or a comma-separated list of addresses, subnets (10.0.0.0/8) and ` +
        `loopback, linklocal or uniquelocal; ${bad.map((entry) => JSON.stringify(entry)).join(', ')} is not one`,
    );
    return false;
  }
  return value;
}

/**
 * `PUBLIC_BASE_URL`, without a trailing slash: HTTPS, or plain HTTP on a loopback host (a service used
 * on one machine, as with `docker compose up`), with nothing but a scheme, a host and a path.
 */
function parsePublicBaseUrl(raw: string | undefined, reading: Reading): string | null {
  if (raw === undefined) return null;
  checkUrl('PUBLIC_BASE_URL', raw, ['https:', 'http:'], reading);
  const value = raw.replace(/\/+$/, '');
  const url = URL.parse(value);
  if (!url) return value;
  if (url.protocol === 'http:' && !['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)) {
    reading.problem('PUBLIC_BASE_URL must use https (plain http only on localhost, 127.0.0.1 or [::1])');
  }
  if (url.username || url.password || url.search || url.hash) {
    reading.problem(
      'PUBLIC_BASE_URL must be a scheme, a host and a path, with no credentials, query or fragment',
    );
  }
  return value;
}

const HTTP_REDIRECT_PORT = int('HTTP_REDIRECT_PORT', {
  min: 0,
  max: 65535,
  description: 'with TLS: a plain-HTTP port that redirects to HTTPS',
});

export const coreSection = section('CORE_CONFIG', {
  title: 'Process',
  variables: {
    nodeEnv: NODE_ENV,
    role: oneOf('ROLE', ['all', 'api', 'worker'], {
      default: 'all',
      description: '`all` (HTTP and processing), `api` (HTTP only) or `worker` (processing only)',
    }),
    port: int('PORT', { default: 3000, min: 0, max: 65535, description: 'HTTP (or HTTPS) port' }),
    publicBaseUrl: custom('PUBLIC_BASE_URL', {
      defaultText: 'unset; required in production',
      description:
        '`https://...` base (plain `http://` only on localhost) the HTTPS redirect points to, and the OAuth ' +
        "issuer and resources; unset (development), the request's Host, checked to be only a host and " +
        'port, and answers naming it are not cached',
      parse: parsePublicBaseUrl,
    }),
    forceHttps: bool('FORCE_HTTPS', {
      default: (reading) => reading.get(NODE_ENV) === 'production',
      defaultText: '`true` in production, else `false`',
      description: 'redirect plain HTTP with 308',
    }),
    trustProxy: custom('TRUST_PROXY', {
      defaultText: 'off',
      description:
        'Express `trust proxy`: a hop count or the addresses of proxies whose `X-Forwarded-*` are believed ' +
        '(`true` is refused: clients could then choose their own address)',
      parse: parseTrustProxy,
    }),
    certFile: string('TLS_CERT_FILE', {
      description: 'serve HTTPS directly: the certificate file, set together with `TLS_KEY_FILE`',
    }),
    keyFile: string('TLS_KEY_FILE', {
      description: 'serve HTTPS directly: the private key file, set together with `TLS_CERT_FILE`',
    }),
    httpRedirectPort: HTTP_REDIRECT_PORT,
    shutdownGraceSeconds: int('SHUTDOWN_GRACE_SECONDS', {
      default: 20,
      min: 0,
      max: 600,
      description:
        'on SIGTERM, how long an API process waits for the requests under way (new ones get 503 ' +
        '`shutting_down`) before it closes its connections',
    }),
    migrateOnBoot: bool('MIGRATE_ON_BOOT', {
      default: true,
      description: 'apply pending migrations at boot',
    }),
  },
  derive: ({ certFile, keyFile, httpRedirectPort, shutdownGraceSeconds, ...values }, reading) => {
    if (Boolean(certFile) !== Boolean(keyFile)) {
      reading.problem('TLS_CERT_FILE and TLS_KEY_FILE must be set together');
    }
    return {
      ...values,
      tls: certFile && keyFile ? { certFile, keyFile, httpRedirectPort: httpRedirectPort || null } : null,
      /** How long shutdown waits for the requests under way (see InFlightRequests). */
      shutdownGraceMs: shutdownGraceSeconds * 1000,
    };
  },
  check: (config, reading) => {
    if (reading.get(HTTP_REDIRECT_PORT) && !config.tls) {
      reading.problem(
        'HTTP_REDIRECT_PORT needs TLS_CERT_FILE and TLS_KEY_FILE (behind a TLS proxy, use FORCE_HTTPS)',
      );
    }
    if (config.nodeEnv === 'production' && !config.publicBaseUrl) {
      // Else the OAuth issuer, the resources tokens are for, and the links in responses come from each
      // request's Host header, which a client chooses (and a cache may keep for others).
      reading.problem(
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
        reading.problem(`${name} must name a readable file; ${JSON.stringify(file)} is not one`);
      }
    }
  },
});

export const CORE_CONFIG = coreSection.token;
export type CoreConfig = ConfigOf<typeof coreSection>;
