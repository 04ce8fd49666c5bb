import { type DynamicModule, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import type { Logger } from 'pino';
import { ContentTypeInterceptor } from 'src/common/http/content-type.interceptor.js';
import { IdempotencyModule } from 'src/common/idempotency/idempotency.module.js';
import { LoggingModule } from 'src/common/logging/logging.module.js';
import { RedisModule } from 'src/common/redis/redis.module.js';
import type { AppConfig } from 'src/config/app-config.js';
import { ConfigModule } from 'src/config/config.module.js';
import { DatabaseModule } from 'src/database/database.module.js';
import { AuthModule } from 'src/modules/auth/auth.module.js';
import { DatasetsModule } from 'src/modules/datasets/datasets.module.js';
import { HealthModule } from 'src/modules/health/health.module.js';

@Module({})
export class AppModule {
  static forRoot(config: AppConfig, logger: Logger): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule.forRoot(logger),
        DatabaseModule,
        RedisModule,
        IdempotencyModule,
        AuthModule,
        HealthModule,
        DatasetsModule,
      ],
      providers: [{ provide: APP_INTERCEPTOR, useClass: ContentTypeInterceptor }],
    };
  }
}
