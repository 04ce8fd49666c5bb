import { readSection } from 'src/config/define.js';
import { redisSection } from 'src/common/redis/redis.config.js';

describe('redisSection', () => {
  it('is one local Redis by default', () => {
    expect(readSection(redisSection, {})).toEqual({
      urls: ['redis://127.0.0.1:6379'],
      cluster: false,
      prefix: 'dss',
    });
  });

  it('reads the seed nodes of a cluster, comma-separated', () => {
    expect(
      readSection(redisSection, {
        REDIS_CLUSTER: 'true',
        REDIS_URL: 'redis://10.0.0.1:7001, redis://10.0.0.2:7002',
      }),
    ).toEqual({ urls: ['redis://10.0.0.1:7001', 'redis://10.0.0.2:7002'], cluster: true, prefix: 'dss' });
  });

  it('refuses several nodes without REDIS_CLUSTER, a bad URL among them, and none at all', () => {
    expect(() => readSection(redisSection, { REDIS_URL: 'redis://a:1,redis://b:2' })).toThrow(
      /REDIS_URL names several nodes, which only a Redis Cluster has/,
    );
    expect(() =>
      readSection(redisSection, { REDIS_CLUSTER: 'true', REDIS_URL: 'redis://a:1,http://b:2' }),
    ).toThrow(/REDIS_URL must be a URL with scheme redis: or rediss:, got "http:\/\/b:2\/"/);
    expect(() => readSection(redisSection, { REDIS_URL: ',' })).toThrow(/REDIS_URL names no Redis/);
  });

  it('refuses a prefix with a brace on a cluster, where it would become the hash tag', () => {
    expect(() => readSection(redisSection, { REDIS_CLUSTER: 'true', REDIS_PREFIX: '{dss}' })).toThrow(
      /REDIS_PREFIX must not contain \{ or \} on a Redis Cluster/,
    );
    expect(readSection(redisSection, { REDIS_PREFIX: '{dss}' }).prefix).toBe('{dss}');
  });
});
