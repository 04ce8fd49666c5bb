import { Module } from '@nestjs/common';
import { DATASET_DIRECTORY } from 'src/modules/auth/auth.types.js';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { DatasetsController } from 'src/modules/datasets/datasets.controller.js';
import { DatasetStoreModule } from 'src/modules/datasets/dataset-store.module.js';
import { DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';

@Module({
  imports: [ChunkIndexModule, DatasetStoreModule],
  controllers: [DatasetsController],
  providers: [
    DatasetsService,
    // The OAuth consent page lists the account's datasets (resolved at run time: auth cannot import us).
    { provide: DATASET_DIRECTORY, useExisting: DatasetsRepository },
  ],
  exports: [DatasetsService, DatasetStoreModule],
})
export class DatasetsModule {}
