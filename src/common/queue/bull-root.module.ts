import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { QUEUE_CONFIG, type QueueConfig } from 'src/common/queue/queue.config.js';
import { REDIS_CONFIG, type RedisConfig } from 'src/common/redis/redis.config.js';

/**
 * Bull's connection and settings, shared by every queue (ingestion, webhooks): a static module, so that
 * all who import it share one configuration.
 */
@Module({
  imports: [
    BullModule.forRootAsync({
      inject: [REDIS_CONFIG, QUEUE_CONFIG],
      useFactory: (redis: RedisConfig, queue: QueueConfig) => ({
        url: redis.url,
        prefix: `${redis.prefix}:bull`,
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
