import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';
import { IngestionQueue, QueueName } from 'src/modules/ingestion-queue/ingestion.queue.js';

const ingestionQueue = BullModule.registerQueue({ name: QueueName.Ingestion });

/**
 * The ingestion queue (Bull, in Redis): `IngestionQueue` for whoever queues documents, and the Bull
 * queue itself for its processor. A static module, so that all who import it share one queue.
 */
@Module({
  imports: [
    BullModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        url: config.redisUrl,
        prefix: `${config.redisPrefix}:bull`,
        // A killed worker's job is noticed within 1.5 lock periods and run again (twice at most).
        settings: {
          lockDuration: config.ingestion.lockSeconds * 1000,
          stalledInterval: config.ingestion.lockSeconds * 500,
          maxStalledCount: 2,
        },
      }),
    }),
    ingestionQueue,
  ],
  providers: [IngestionQueue],
  exports: [IngestionQueue, ingestionQueue],
})
export class IngestionQueueModule {}
