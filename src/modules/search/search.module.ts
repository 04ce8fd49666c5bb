import { Module } from '@nestjs/common';
import { DatasetsModule } from 'src/modules/datasets/datasets.module.js';
import { RerankService } from 'src/modules/search/rerank/rerank.service.js';
import { SearchController } from 'src/modules/search/search.controller.js';
import { SearchRepository } from 'src/modules/search/search.repository.js';
import { SearchService } from 'src/modules/search/search.service.js';

@Module({
  imports: [DatasetsModule],
  controllers: [SearchController],
  providers: [SearchService, SearchRepository, RerankService],
  exports: [SearchService],
})
export class SearchModule {}
