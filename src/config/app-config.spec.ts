import { ConfigError, loadConfig } from 'src/config/app-config.js';

describe('loadConfig', () => {
  it('has working defaults for a development machine', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      nodeEnv: 'development',
      role: 'all',
      port: 3000,
      forceHttps: false,
      rateLimits: { anonymous: 50, apiKey: 1000, oauth: 15000, session: 15000, windowSeconds: 3600 },
      idempotencyTtlHours: 24,
    });
  });

  it('forces HTTPS by default in production, unless told otherwise', () => {
    expect(loadConfig({ NODE_ENV: 'production' }).forceHttps).toBe(true);
    expect(loadConfig({ NODE_ENV: 'production', FORCE_HTTPS: 'false' }).forceHttps).toBe(false);
  });

  it('names every bad variable in one error', () => {
    let error: unknown;
    try {
      loadConfig({
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
    expect(() => loadConfig({ DATABASE_URL: 'mysql://user:hunter2@db/x' })).toThrow(/\*\*\*/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://user:hunter2@db/x' })).not.toThrow(/hunter2/);
  });

  it('reads TRUST_PROXY as a hop count or an address list, never as "trust everything"', () => {
    expect(() => loadConfig({ TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY must be a hop count/);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy).toBe('loopback, 10.0.0.0/8');
  });
});
