import { bullClusterOptions } from 'src/common/queue/bull-cluster-clients.js';
import { bullPrefix } from 'src/common/queue/bull-root.module.js';

describe('bullPrefix', () => {
  it('keeps the single-Redis layout, and is one hash tag on a cluster', () => {
    expect(bullPrefix({ prefix: 'dss', cluster: false })).toBe('dss:bull');
    expect(bullPrefix({ prefix: 'dss', cluster: true })).toBe('{dss:bull}');
  });
});

describe('bullClusterOptions', () => {
  const urls = ['redis://app:secret@10.0.0.1:7001', 'redis://10.0.0.2'];

  it('seeds the cluster with every node, and gives each node the credentials', () => {
    const { nodes, options } = bullClusterOptions(urls, 'client');
    expect(nodes).toEqual([
      { host: '10.0.0.1', port: 7001 },
      { host: '10.0.0.2', port: 6379 },
    ]);
    expect(options.redisOptions).toEqual({ username: 'app', password: 'secret' });
  });

  it.each(['subscriber', 'bclient'] as const)(
    'gives the %s connection neither retries per command nor a ready check, which Bull refuses',
    (type) => {
      expect(bullClusterOptions(urls, type).options.redisOptions).toMatchObject({
        maxRetriesPerRequest: null,
        enableReadyCheck: false,
      });
    },
  );

  it('connects over TLS for rediss URLs', () => {
    expect(bullClusterOptions(['rediss://10.0.0.1:7001'], 'client').options.redisOptions).toEqual({
      tls: {},
    });
  });
});
