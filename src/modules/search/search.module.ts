import { Module } from '@nestjs/common';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { DatasetsModule } from 'src/modules/datasets/datasets.module.js';
import { EmbeddingsModule } from 'src/modules/embeddings/embeddings.module.js';
import { EarlyQueryEmbedding } from 'src/modules/search/early-query-embedding.js';
import { EvaluationController } from 'src/modules/search/evaluation/evaluation.controller.js';
import { EvaluationService } from 'src/modules/search/evaluation/evaluation.service.js';
import { Highlights } from 'src/modules/search/highlights.js';
import { PostingsWarmer } from 'src/modules/search/postings-warmer.js';
import { RerankService } from 'src/modules/search/rerank/rerank.service.js';
import { SearchController } from 'src/modules/search/search.controller.js';
import { SearchLegsModule } from 'src/modules/search/search-legs.module.js';
import { SearchService } from 'src/modules/search/search.service.js';

@Module({
  imports: [ChunkIndexModule, DatasetsModule, EmbeddingsModule, SearchLegsModule],
  controllers: [SearchController, EvaluationController],
  providers: [
    SearchService,
    EvaluationService,
    EarlyQueryEmbedding,
    PostingsWarmer,
    RerankService,
    Highlights,
  ],
  exports: [SearchService, EvaluationService, EarlyQueryEmbedding],
})
export class SearchModule {}
