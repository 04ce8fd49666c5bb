import { Module } from '@nestjs/common';
import { DatasetsController } from 'src/modules/datasets/datasets.controller.js';
import { DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';

@Module({
  controllers: [DatasetsController],
  providers: [DatasetsService, DatasetsRepository],
  exports: [DatasetsService, DatasetsRepository],
})
export class DatasetsModule {}
