import { Module } from '@nestjs/common';
import { EmbeddingsModule } from 'src/modules/embeddings/embeddings.module.js';
import { HealthController } from 'src/modules/health/health.controller.js';
import { HealthService } from 'src/modules/health/health.service.js';

@Module({ imports: [EmbeddingsModule], controllers: [HealthController], providers: [HealthService] })
export class HealthModule {}
