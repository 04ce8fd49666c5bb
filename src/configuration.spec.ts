import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from 'src/config/define.js';
import { PROJECT_ROOT } from 'src/config/project-root.js';
import { configTable, loadConfiguration, SECTIONS } from 'src/configuration.js';

describe('loadConfiguration', () => {
  it('has working defaults for a development machine', () => {
    const config = loadConfiguration({});
    expect(config).toMatchObject({
      core: { nodeEnv: 'development', role: 'all', port: 3000, forceHttps: false },
      rateLimits: { anonymous: 50, apiKey: 1000, oauth: 15000, session: 15000, windowSeconds: 3600 },
      idempotency: { ttlHours: 24 },
    });
  });

  it('bounds slow clients by default, and refuses a headers timeout longer than the request timeout', () => {
    expect(loadConfiguration({}).http).toEqual({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 180_000,
      keepAliveTimeoutMs: 5_000,
      jsonBodyLimitBytes: 16 * 1024 * 1024,
    });
    expect(
      loadConfiguration({ HTTP_HEADERS_TIMEOUT_MS: '500', HTTP_REQUEST_TIMEOUT_MS: '500' }).http,
    ).toMatchObject({ headersTimeoutMs: 500, requestTimeoutMs: 500 });
    expect(() =>
      loadConfiguration({ HTTP_HEADERS_TIMEOUT_MS: '60000', HTTP_REQUEST_TIMEOUT_MS: '30000' }),
    ).toThrow(/HTTP_HEADERS_TIMEOUT_MS must not exceed HTTP_REQUEST_TIMEOUT_MS/);
    expect(() => loadConfiguration({ HTTP_REQUEST_TIMEOUT_MS: '0' })).toThrow(
      /HTTP_REQUEST_TIMEOUT_MS must be/,
    );
  });

  const PRODUCTION = { NODE_ENV: 'production', PUBLIC_BASE_URL: 'https://search.example.com' };

  it('forces HTTPS by default in production, unless told otherwise', () => {
    expect(loadConfiguration(PRODUCTION).core.forceHttps).toBe(true);
    expect(loadConfiguration({ ...PRODUCTION, FORCE_HTTPS: 'false' }).core.forceHttps).toBe(false);
  });

  it('refuses to start in production without PUBLIC_BASE_URL, where the Host header would name the service', () => {
    expect(() => loadConfiguration({ NODE_ENV: 'production' })).toThrow(
      /PUBLIC_BASE_URL is required in production/,
    );
  });

  it.each([
    ['https://search.example.com/', 'https://search.example.com'],
    ['http://localhost:3000', 'http://localhost:3000'],
    ['http://127.0.0.1:8080/base', 'http://127.0.0.1:8080/base'],
  ])('takes PUBLIC_BASE_URL %s', (value, expected) => {
    expect(loadConfiguration({ PUBLIC_BASE_URL: value }).core.publicBaseUrl).toBe(expected);
  });

  it.each([
    ['http://search.example.com', /must use https/],
    ['https://user:pw@search.example.com', /no credentials, query or fragment/],
    ['https://search.example.com/?x=1', /no credentials, query or fragment/],
    ['ftp://search.example.com', /must be a URL with scheme/],
  ])('refuses PUBLIC_BASE_URL %s', (value, problem) => {
    expect(() => loadConfiguration({ PUBLIC_BASE_URL: value })).toThrow(problem);
  });

  it('downloads models by default, but not in tests or where CI is set to anything but false, 0 or no', () => {
    const allowed = (env: Record<string, string>) =>
      loadConfiguration({ ...PRODUCTION, ...env }).embeddings.allowDownload;
    expect(allowed({})).toBe(true);
    expect(allowed({ NODE_ENV: 'test' })).toBe(false);
    for (const ci of ['true', '1', 'github-actions']) expect(allowed({ CI: ci })).toBe(false);
    for (const ci of ['false', '0', 'no', 'NO']) expect(allowed({ CI: ci })).toBe(true);
    expect(allowed({ CI: 'true', EMBEDDING_ALLOW_DOWNLOAD: 'true' })).toBe(true);
  });

  it('names every bad variable in one error', () => {
    let error: unknown;
    try {
      loadConfiguration({
        PORT: '70000',
        DATABASE_URL: 'mysql://db',
        FORCE_HTTPS: 'maybe',
        TLS_CERT_FILE: '/cert.pem',
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(4);
    for (const name of ['PORT', 'DATABASE_URL', 'FORCE_HTTPS', 'TLS_CERT_FILE']) {
      expect(problems.some((problem) => problem.startsWith(name))).toBe(true);
    }
  });

  it('never prints a database password in an error', () => {
    expect(() => loadConfiguration({ DATABASE_URL: 'mysql://user:hunter2@db/x' })).toThrow(/\*\*\*/);
    expect(() => loadConfiguration({ DATABASE_URL: 'mysql://user:hunter2@db/x' })).not.toThrow(/hunter2/);
  });

  it('reads SEMANTIC_CALIBRATION as points by model, and names what is wrong with them', () => {
    expect(loadConfiguration({}).search.semanticCalibrations).toEqual({});
    const points = [
      [0.1, 0],
      [0.6, 0.9],
    ];
    expect(
      loadConfiguration({ SEMANTIC_CALIBRATION: JSON.stringify({ m: points }) }).search.semanticCalibrations,
    ).toEqual({
      m: points,
    });
    for (const [value, issue] of [
      ['[1, 2]', /must be a JSON object/],
      ['{"m": 1}', /\["m"\] must be a list of at least two/],
      ['{"m": [[0, 0], [0.5]]}', /point 1 must be \[cosine, relevance\]/],
      ['{"m": [[0, 0], [0.5, 1.5]]}', /point 1 must have a cosine in -1..1 and a relevance in 0..1/],
      ['{"m": [[0.5, 0], [0.4, 0.5]]}', /point 1 must follow point 0/],
      ['{"m": [[0, 0.6], [0.5, 0.5]]}', /point 1 must follow point 0/],
    ] as const) {
      expect(() => loadConfiguration({ SEMANTIC_CALIBRATION: value })).toThrow(issue);
    }
  });

  it('reads TRUST_PROXY as a hop count or an address list, never as "trust everything"', () => {
    expect(() => loadConfiguration({ TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY must be a hop count/);
    expect(loadConfiguration({ TRUST_PROXY: '2' }).core.trustProxy).toBe(2);
    expect(loadConfiguration({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }).core.trustProxy).toBe(
      'loopback, 10.0.0.0/8',
    );
    const list = 'uniquelocal,192.168.1.7, 10.0.0.0/255.0.0.0, fe80::/10, ::1';
    expect(loadConfiguration({ TRUST_PROXY: list }).core.trustProxy).toBe(list);
  });

  it.each(['garbage!!', '-1', '10.0.0.0/33', '::/129', '10.0.0.1/8/8', 'loopback,', '1.2.3'])(
    'refuses TRUST_PROXY=%s, which Express would only refuse once the server starts',
    (value) => {
      expect(() => loadConfiguration({ TRUST_PROXY: value })).toThrow(
        /TRUST_PROXY must be a hop count or a comma-separated/,
      );
    },
  );

  it('refuses settings that are valid alone but not together, naming each', () => {
    let problems = '';
    try {
      loadConfiguration({
        RERANK_PROVIDER: 'http',
        EMBEDDING_PROVIDER: 'openai',
        HTTP_REDIRECT_PORT: '8080',
        PORT: 'abc',
      });
    } catch (error) {
      problems = (error as Error).message;
    }
    expect(problems).toMatch(/RERANK_PROVIDER=http needs RERANK_BASE_URL/);
    expect(problems).toMatch(/RERANK_PROVIDER=http needs RERANK_MODEL/);
    expect(problems).toMatch(/EMBEDDING_PROVIDER=openai needs OPENAI_API_KEY/);
    expect(problems).toMatch(/HTTP_REDIRECT_PORT needs TLS_CERT_FILE and TLS_KEY_FILE/);
    expect(problems).toMatch(/PORT/);
  });

  it('needs no RERANK_MODEL for the local reranker, whose default it names', () => {
    expect(loadConfiguration({ RERANK_PROVIDER: 'local' }).rerank.model).toBe(
      'Xenova/ms-marco-MiniLM-L-6-v2',
    );
  });

  it('refuses TLS files that cannot be read', () => {
    expect(() =>
      loadConfiguration({ TLS_CERT_FILE: '/nonexistent/cert.pem', TLS_KEY_FILE: '/nonexistent/key.pem' }),
    ).toThrow(/TLS_CERT_FILE must name a readable file[\s\S]*TLS_KEY_FILE must name a readable file/);
  });

  it('derives the defaults that depend on other variables', () => {
    expect(loadConfiguration({}).logging.level).toBe('info');
    expect(loadConfiguration({ NODE_ENV: 'test' }).logging.level).toBe('silent');
    expect(loadConfiguration({}).chunkIndex.datasetIndexMinChunks).toBe(20_000);
    expect(loadConfiguration({ SEARCH_EXACT_SCAN_MAX_CHUNKS: '5000' }).chunkIndex).toMatchObject({
      exactScanMaxChunks: 5_000,
      datasetIndexMinChunks: 5_000,
    });
    expect(loadConfiguration({}).sessions.secureCookie).toBe(false);
    expect(loadConfiguration(PRODUCTION).sessions.secureCookie).toBe(true);
    expect(loadConfiguration({ FORCE_HTTPS: 'true' }).sessions.secureCookie).toBe(true);
    expect(loadConfiguration({ PUBLIC_BASE_URL: 'https://x.example' }).sessions.secureCookie).toBe(true);
    expect(loadConfiguration({ SHUTDOWN_GRACE_SECONDS: '3' }).core.shutdownGraceMs).toBe(3_000);
  });
});

describe('configTable', () => {
  it('is the tables of README.md, section Configuration (`node dist/cli.js config-table` prints them)', () => {
    const readme = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');
    const tables = /<!-- config-table:start -->\n([\s\S]*?)\n<!-- config-table:end -->/.exec(readme);
    expect(tables?.[1]).toBe(configTable());
  });

  it('has a row for every variable, each declared once, with a description', () => {
    const names = Object.values(SECTIONS).flatMap((section) => section.variables.map((v) => v.name));
    expect(new Set(names).size).toBe(names.length);
    for (const section of Object.values(SECTIONS)) {
      for (const variable of section.variables) expect(variable.description).not.toBe('');
    }
    const rows = configTable()
      .split('\n')
      .filter((line) => line.startsWith('| `'));
    expect(rows.map((row) => /^\| `([A-Z0-9_]+)`/.exec(row)?.[1])).toEqual(names);
  });
});
