import { ClientClosedError, ClientOfflineError, ErrorReply, RootNodesUnavailableError } from 'redis';
import { clusterNodeDefaults, isRedisUnavailable } from 'src/common/redis/redis.module.js';

describe('isRedisUnavailable', () => {
  it("recognises a single client's and a cluster's errors of an unreachable Redis", () => {
    expect(isRedisUnavailable(new ClientOfflineError())).toBe(true);
    expect(isRedisUnavailable(new ClientClosedError())).toBe(true);
    expect(isRedisUnavailable(new RootNodesUnavailableError())).toBe(true);
    expect(
      isRedisUnavailable(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    ).toBe(true);
  });

  it("does not take Redis's answers or other errors for an outage", () => {
    expect(isRedisUnavailable(new ErrorReply('CROSSSLOT Keys in request do not hash to the same slot'))).toBe(
      false,
    );
    expect(isRedisUnavailable(new Error('boom'))).toBe(false);
    expect(isRedisUnavailable('ECONNREFUSED')).toBe(false);
  });
});

describe('clusterNodeDefaults', () => {
  it("repeats the seed URL's credentials and TLS for every node the cluster discovers", () => {
    expect(clusterNodeDefaults('rediss://app:p%40ss@10.0.0.1:7001')).toEqual({
      username: 'app',
      password: 'p@ss',
      tls: true,
    });
    expect(clusterNodeDefaults('redis://10.0.0.1:7001')).toEqual({ tls: false });
  });
});
