import { Module } from '@nestjs/common';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { EventsModule } from 'src/modules/events/events.module.js';
import { DatasetsController } from 'src/modules/datasets/datasets.controller.js';
import { DatasetStoreModule } from 'src/modules/datasets/dataset-store.module.js';
import { DatasetsService } from 'src/modules/datasets/datasets.service.js';

@Module({
  imports: [ChunkIndexModule, DatasetStoreModule, EventsModule],
  controllers: [DatasetsController],
  providers: [DatasetsService],
  // The store's repository too: the application binds it as the OAuth consent page's dataset directory.
  exports: [DatasetsService, DatasetStoreModule],
})
export class DatasetsModule {}
