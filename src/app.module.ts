import { type DynamicModule, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import type { Logger } from 'pino';
import { LocationInterceptor } from 'src/common/http/location.interceptor.js';
import { RequestBodyInterceptor } from 'src/common/http/request-body.interceptor.js';
import { UnknownQueryInterceptor } from 'src/common/http/unknown-query.interceptor.js';
import { InFlightRequests } from 'src/common/http/in-flight-requests.js';
import { IdempotencyModule } from 'src/common/idempotency/idempotency.module.js';
import { LoggingModule } from 'src/common/logging/logging.module.js';
import { RedisModule } from 'src/common/redis/redis.module.js';
import { DatabaseModule } from 'src/database/database.module.js';
import { AuthModule } from 'src/modules/auth/auth.module.js';
import { DatasetsModule } from 'src/modules/datasets/datasets.module.js';
import { DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';
import { DocumentsModule } from 'src/modules/documents/documents.module.js';
import { HealthModule } from 'src/modules/health/health.module.js';
import { IngestionModule } from 'src/modules/ingestion/ingestion.module.js';
import { McpModule } from 'src/modules/mcp/mcp.module.js';
import { EarlyQueryEmbedding } from 'src/modules/search/early-query-embedding.js';
import { ReembeddingModule } from 'src/modules/embeddings/reembedding.module.js';
import { FusionTuningModule } from 'src/modules/search/fusion-tuning.module.js';
import { SearchModule } from 'src/modules/search/search.module.js';
import { DatasetTransferModule } from 'src/modules/transfer/dataset-transfer.module.js';
import { WebhookDeliveryModule } from 'src/modules/webhooks/delivery/webhook-delivery.module.js';
import { WebhooksModule } from 'src/modules/webhooks/webhooks.module.js';
import { configModule, type Configuration } from 'src/configuration.js';

@Module({})
export class AppModule {
  /**
   * The whole service for ROLE `all` and `api`; for ROLE `worker`, only what processing documents needs
   * (no HTTP routes, no rate limits).
   */
  static forRoot(config: Configuration, logger: Logger): DynamicModule {
    const infrastructure = [
      configModule(config),
      LoggingModule.forRoot(logger),
      DatabaseModule,
      RedisModule,
      ...(config.core.role === 'api' ? [] : [IngestionModule, FusionTuningModule, WebhookDeliveryModule]),
    ];
    if (config.core.role === 'worker') return { module: AppModule, imports: infrastructure };
    return {
      module: AppModule,
      imports: [
        ...infrastructure,
        IdempotencyModule,
        AuthModule,
        HealthModule,
        DatasetsModule,
        DocumentsModule,
        SearchModule,
        ReembeddingModule,
        DatasetTransferModule,
        McpModule,
        WebhooksModule,
      ],
      providers: [
        InFlightRequests,
        { provide: APP_INTERCEPTOR, useClass: RequestBodyInterceptor },
        { provide: APP_INTERCEPTOR, useClass: UnknownQueryInterceptor },
        { provide: APP_INTERCEPTOR, useClass: LocationInterceptor },
        // Auth imports no feature: what it needs of them is bound here, where both are imported.
        AuthModule.bind({ datasetDirectory: DatasetsRepository, earlyStarts: [EarlyQueryEmbedding] }),
      ],
    };
  }
}
