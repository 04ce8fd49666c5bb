import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { BullClusterClients, BullClusterClientsModule } from 'src/common/queue/bull-cluster-clients.js';
import { QUEUE_CONFIG, type QueueConfig } from 'src/common/queue/queue.config.js';
import { REDIS_CONFIG, type RedisConfig } from 'src/common/redis/redis.config.js';

/**
 * The prefix of Bull's keys. Bull's scripts touch several keys of a queue at once, so on a Redis
 * Cluster the prefix is a hash tag, which puts every queue's keys in one slot.
 */
export function bullPrefix(redis: Pick<RedisConfig, 'prefix' | 'cluster'>): string {
  return redis.cluster ? `{${redis.prefix}:bull}` : `${redis.prefix}:bull`;
}

/**
 * Bull's connection and settings, shared by every queue (ingestion, webhooks): a static module, so that
 * all who import it share one configuration.
 */
@Module({
  imports: [
    BullModule.forRootAsync({
      imports: [BullClusterClientsModule],
      inject: [REDIS_CONFIG, QUEUE_CONFIG, BullClusterClients],
      useFactory: (redis: RedisConfig, queue: QueueConfig, clusterClients: BullClusterClients) => ({
        ...(redis.cluster
          ? { createClient: (type: 'client' | 'subscriber' | 'bclient') => clusterClients.create(type) }
          : { url: redis.urls[0] }),
        prefix: bullPrefix(redis),
        // A killed worker's job is noticed within 1.5 lock periods and run again (twice at most).
        settings: {
          lockDuration: queue.lockSeconds * 1000,
          stalledInterval: queue.lockSeconds * 500,
          maxStalledCount: 2,
        },
      }),
    }),
  ],
  exports: [BullModule],
})
export class BullRootModule {}
