import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from 'src/config/app-config.js';

/**
 * Bull's connection and settings, shared by every queue (ingestion, webhooks): a static module, so that
 * all who import it share one configuration.
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
  ],
  exports: [BullModule],
})
export class BullRootModule {}
