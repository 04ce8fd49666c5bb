import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import {
  ClientClosedError,
  ClientOfflineError,
  ConnectionTimeoutError,
  createClient,
  createCluster,
  RedisCluster,
  type RedisClientType,
  type RedisClusterType,
  RootNodesUnavailableError,
  SocketClosedUnexpectedlyError,
  SocketTimeoutError,
} from 'redis';
import { REDIS_CONFIG, type RedisConfig } from 'src/common/redis/redis.config.js';

export const REDIS = Symbol('REDIS');
/** One Redis, or a Redis Cluster (`REDIS_CLUSTER`): the commands the app uses are the same on both. */
export type Redis = RedisClientType | RedisClusterType;

const RECONNECT_MAX_MS = 2_000;
const CONNECT_TIMEOUT_MS = 5_000;
/** Errors of a socket that found no Redis (a cluster node whose first connection fails). */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT']);

/**
 * An error of a command that never reached Redis, or whose answer never came: Redis is down or
 * unreachable (the client queues nothing while offline). Nothing was changed by it for certain only
 * when the command was refused offline, but every use of Redis in a request is safe to retry.
 */
export function isRedisUnavailable(error: unknown): boolean {
  if (
    [
      ClientOfflineError,
      ClientClosedError,
      ConnectionTimeoutError,
      SocketClosedUnexpectedlyError,
      SocketTimeoutError,
      RootNodesUnavailableError,
    ].some((type) => error instanceof type)
  ) {
    return true;
  }
  const code = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined;
  return code !== undefined && UNREACHABLE_CODES.has(code);
}

/** The event after which the client takes commands (a cluster's once it knows the slots). */
export function readyEvent(redis: Redis): 'ready' | 'connect' {
  return redis instanceof RedisCluster ? 'connect' : 'ready';
}

/**
 * The cluster's connection settings for every node it discovers: `rootNodes` are only used to read
 * the topology, so credentials and TLS of the seed URL are repeated here.
 */
export function clusterNodeDefaults(url: string): {
  username?: string;
  password?: string;
  tls: boolean;
} {
  const parsed = new URL(url);
  return {
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    tls: parsed.protocol === 'rediss:',
  };
}

/** The app's Redis client, connecting in the background and again after each loss, until `close`. */
export class RedisConnection {
  readonly client: Redis;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(config: RedisConfig) {
    // Fail fast while Redis is down instead of queueing commands without bound.
    const socket = {
      reconnectStrategy: (retries: number) => Math.min(retries * 100, RECONNECT_MAX_MS),
      connectTimeout: CONNECT_TIMEOUT_MS,
    };
    if (config.cluster) {
      const { tls, ...credentials } = clusterNodeDefaults(config.urls[0]);
      this.client = createCluster({
        rootNodes: config.urls.map((url) => ({ url })),
        defaults: { ...credentials, disableOfflineQueue: true, socket: tls ? { ...socket, tls } : socket },
      });
    } else {
      this.client = createClient({ url: config.urls[0], disableOfflineQueue: true, socket });
    }
    // The app boots while Redis is down: commands fail fast, /ready says so, and the client keeps
    // reconnecting in the background. Connection errors surface there rather than as events.
    this.client.on('error', () => undefined);
    this.connect(0);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    if (this.client.isOpen) await this.client.close();
  }

  /** A single client reconnects by itself; a cluster gives up when no seed node answers, so it is asked again. */
  private connect(attempt: number): void {
    this.client.connect().catch(() => {
      if (this.closed || !(this.client instanceof RedisCluster)) return;
      this.retry = setTimeout(
        () => this.connect(attempt + 1),
        Math.min((attempt + 1) * 100, RECONNECT_MAX_MS),
      );
      this.retry.unref();
    });
  }
}

const CONNECTION = Symbol('REDIS_CONNECTION');

/** One shared Redis connection for rate limits, sessions and readiness checks (Bull keeps its own). */
@Global()
@Module({
  providers: [
    {
      provide: CONNECTION,
      inject: [REDIS_CONFIG],
      useFactory: (config: RedisConfig) => new RedisConnection(config),
    },
    {
      provide: REDIS,
      inject: [CONNECTION],
      useFactory: (connection: RedisConnection): Redis => connection.client,
    },
  ],
  exports: [REDIS],
})
export class RedisModule implements OnApplicationShutdown {
  constructor(@Inject(CONNECTION) private readonly connection: RedisConnection) {}

  onApplicationShutdown(): Promise<void> {
    return this.connection.close();
  }
}
