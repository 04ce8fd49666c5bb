import { bool, checkUrl, type ConfigOf, custom, section, string } from 'src/config/define.js';

const PROTOCOLS = ['redis:', 'rediss:'];

export const redisSection = section('REDIS_CONFIG', {
  title: 'Redis',
  variables: {
    /** One Redis, or with `REDIS_CLUSTER` the seed nodes the cluster's topology is discovered from. */
    urls: custom('REDIS_URL', {
      defaultText: '`redis://127.0.0.1:6379`',
      description:
        'Redis for rate limits, sessions and jobs; with `REDIS_CLUSTER`, one or more nodes of the cluster, comma-separated',
      parse: (raw, reading) => {
        const urls = (raw ?? 'redis://127.0.0.1:6379')
          .split(',')
          .map((url) => url.trim())
          .filter((url) => url !== '');
        if (urls.length === 0) reading.problem('REDIS_URL names no Redis');
        for (const url of urls) checkUrl('REDIS_URL', url, PROTOCOLS, reading);
        return urls;
      },
    }),
    cluster: bool('REDIS_CLUSTER', {
      default: false,
      description: 'Redis is a Redis Cluster, `REDIS_URL` names its seed nodes (docs/deployment.md)',
    }),
    /** Prefix for every Redis key this process writes (rate limits, queues), so tenants of one Redis never collide. */
    prefix: string('REDIS_PREFIX', {
      default: 'dss',
      description: 'prefix of every Redis key this deployment writes',
    }),
  },
  check: ({ urls, cluster, prefix }, reading) => {
    if (!cluster && urls.length > 1) {
      reading.problem('REDIS_URL names several nodes, which only a Redis Cluster has (REDIS_CLUSTER=true)');
    }
    // The keys' hash tags are what keeps a command's keys in one slot; a brace in the prefix would come first.
    if (cluster && /[{}]/.test(prefix)) {
      reading.problem(`REDIS_PREFIX must not contain { or } on a Redis Cluster, got "${prefix}"`);
    }
  },
});

export const REDIS_CONFIG = redisSection.token;
export type RedisConfig = ConfigOf<typeof redisSection>;
