import { type ConfigOf, section, string, url } from 'src/config/define.js';

export const redisSection = section('REDIS_CONFIG', {
  title: 'Redis',
  variables: {
    url: url('REDIS_URL', {
      protocols: ['redis:', 'rediss:'],
      default: 'redis://127.0.0.1:6379',
      description: 'Redis for rate limits and jobs',
    }),
    /** Prefix for every Redis key this process writes (rate limits, queues), so tenants of one Redis never collide. */
    prefix: string('REDIS_PREFIX', {
      default: 'dss',
      description: 'prefix of every Redis key this deployment writes',
    }),
  },
});

export const REDIS_CONFIG = redisSection.token;
export type RedisConfig = ConfigOf<typeof redisSection>;
