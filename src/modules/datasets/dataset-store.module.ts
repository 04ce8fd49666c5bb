import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';

/**
 * Datasets' rows without their HTTP resource: for the processing roles, whose pipeline reads what a
 * dataset's documents are indexed with and serves no route (a worker builds no controller).
 */
@Module({
  imports: [TypeOrmModule.forFeature([DatasetEntity])],
  providers: [DatasetsRepository],
  exports: [DatasetsRepository],
})
export class DatasetStoreModule {}
