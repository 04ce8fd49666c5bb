import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import {
  ClientClosedError,
  ClientOfflineError,
  ConnectionTimeoutError,
  createClient,
  type RedisClientType,
  SocketClosedUnexpectedlyError,
  SocketTimeoutError,
} from 'redis';
import { REDIS_CONFIG, type RedisConfig } from 'src/common/redis/redis.config.js';

export const REDIS = Symbol('REDIS');
export type Redis = RedisClientType;

/**
 * An error of a command that never reached Redis, or whose answer never came: Redis is down or
 * unreachable (the client queues nothing while offline). Nothing was changed by it for certain only
 * when the command was refused offline, but every use of Redis in a request is safe to retry.
 */
export function isRedisUnavailable(error: unknown): boolean {
  return [
    ClientOfflineError,
    ClientClosedError,
    ConnectionTimeoutError,
    SocketClosedUnexpectedlyError,
    SocketTimeoutError,
  ].some((type) => error instanceof type);
}

/** One shared Redis connection for rate limits and readiness checks (Bull keeps its own). */
@Global()
@Module({
  providers: [
    {
      provide: REDIS,
      inject: [REDIS_CONFIG],
      useFactory: (config: RedisConfig): Redis => {
        const client: Redis = createClient({
          url: config.url,
          // Fail fast while Redis is down instead of queueing commands without bound.
          disableOfflineQueue: true,
          socket: { reconnectStrategy: (retries) => Math.min(retries * 100, 2_000), connectTimeout: 5_000 },
        });
        // The app boots while Redis is down: commands fail fast, /ready says so, and the client keeps
        // reconnecting in the background. Connection errors surface there rather than as events.
        client.on('error', () => undefined);
        client.connect().catch(() => undefined);
        return client;
      },
    },
  ],
  exports: [REDIS],
})
export class RedisModule implements OnApplicationShutdown {
  constructor(@Inject(REDIS) private readonly redis: Redis) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.redis.isOpen) await this.redis.close();
  }
}
