import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Cluster } from 'ioredis';
import { REDIS_CONFIG, type RedisConfig } from 'src/common/redis/redis.config.js';
import { clusterNodeDefaults } from 'src/common/redis/redis.module.js';

/** The connections Bull asks for: commands, its event subscriptions, and the blocking wait for jobs. */
export type BullClientType = 'client' | 'subscriber' | 'bclient';

/** ioredis's cluster settings for a Bull connection of `type`, from the seed URLs. */
export function bullClusterOptions(
  urls: readonly string[],
  type: BullClientType,
): {
  nodes: { host: string; port: number }[];
  options: NonNullable<ConstructorParameters<typeof Cluster>[1]>;
} {
  const { tls, ...credentials } = clusterNodeDefaults(urls[0]);
  const nodes = urls.map((url) => {
    const parsed = new URL(url);
    return { host: parsed.hostname, port: Number(parsed.port || 6379) };
  });
  // Bull refuses a subscriber or blocking connection that retries its commands or waits for a ready
  // check: a blocked BRPOPLPUSH must not be replayed, and a subscriber sends no INFO.
  const blocking = type !== 'client';
  return {
    nodes,
    options: {
      redisOptions: {
        ...credentials,
        ...(tls ? { tls: {} } : {}),
        ...(blocking ? { maxRetriesPerRequest: null, enableReadyCheck: false } : {}),
      },
    },
  };
}

/**
 * Bull's connections to a Redis Cluster (Bull's `createClient`): ioredis `Cluster` clients, since a URL
 * gives Bull a single-node client. Bull does not close connections it was given, so they are closed
 * here, after the queues (this module lies deeper than the queues', so it shuts down after them).
 */
@Injectable()
export class BullClusterClients implements OnApplicationShutdown {
  private readonly clients: Cluster[] = [];

  constructor(@Inject(REDIS_CONFIG) private readonly config: RedisConfig) {}

  create(type: BullClientType): Cluster {
    const { nodes, options } = bullClusterOptions(this.config.urls, type);
    const client = new Cluster(nodes, options);
    this.clients.push(client);
    return client;
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.clients.map((client) => client.quit().catch(() => client.disconnect())));
  }
}

@Module({ providers: [BullClusterClients], exports: [BullClusterClients] })
export class BullClusterClientsModule {}
