import { Module } from '@nestjs/common';
import { SEARCH_CONFIG, type SearchConfig } from 'src/modules/search/search.config.js';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { DatasetsModule } from 'src/modules/datasets/datasets.module.js';
import { EmbeddingsModule } from 'src/modules/embeddings/embeddings.module.js';
import { EarlyQueryEmbedding } from 'src/modules/search/early-query-embedding.js';
import { KeywordLeg } from 'src/modules/search/keyword-leg.js';
import { PostingsCache, postingsIn } from 'src/modules/search/postings-cache.js';
import { PostingsWarmer } from 'src/modules/search/postings-warmer.js';
import { RerankService } from 'src/modules/search/rerank/rerank.service.js';
import { SearchController } from 'src/modules/search/search.controller.js';
import { QueryVectors } from 'src/modules/search/query-vectors.js';
import { SearchService } from 'src/modules/search/search.service.js';
import { SearchPool } from 'src/modules/search/search-pool.js';
import { SearchReads } from 'src/modules/search/search-reads.js';
import { VectorLeg } from 'src/modules/search/vector-leg.js';

@Module({
  imports: [ChunkIndexModule, DatasetsModule, EmbeddingsModule],
  controllers: [SearchController],
  providers: [
    SearchService,
    QueryVectors,
    EarlyQueryEmbedding,
    KeywordLeg,
    VectorLeg,
    SearchReads,
    SearchPool,
    PostingsWarmer,
    RerankService,
    {
      provide: PostingsCache,
      inject: [SEARCH_CONFIG],
      useFactory: (config: SearchConfig) => new PostingsCache(postingsIn(config.postingsCacheMiB)),
    },
  ],
  exports: [SearchService, EarlyQueryEmbedding, QueryVectors, SearchReads],
})
export class SearchModule {}
