import { Module } from '@nestjs/common';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { DatasetsController } from 'src/modules/datasets/datasets.controller.js';
import { DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';

@Module({
  imports: [ChunkIndexModule],
  controllers: [DatasetsController],
  providers: [DatasetsService, DatasetsRepository],
  exports: [DatasetsService, DatasetsRepository],
})
export class DatasetsModule {}
