import { Module } from '@nestjs/common';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { EmbeddingsModule } from 'src/modules/embeddings/embeddings.module.js';
import { KeywordLeg } from 'src/modules/search/keyword-leg.js';
import { PostingsCache, postingsIn } from 'src/modules/search/postings-cache.js';
import { QueryVectors } from 'src/modules/search/query-vectors.js';
import { SEARCH_CONFIG, type SearchConfig } from 'src/modules/search/search.config.js';
import { SearchLegs } from 'src/modules/search/search-legs.js';
import { SearchPool } from 'src/modules/search/search-pool.js';
import { SearchReads } from 'src/modules/search/search-reads.js';
import { VectorLeg } from 'src/modules/search/vector-leg.js';

/**
 * The legs of a search and what they run on (the search pool, the query vectors, the postings
 * cache), without the routes: the API's searches and the workers' fusion tuning share them.
 */
@Module({
  imports: [ChunkIndexModule, EmbeddingsModule],
  providers: [
    SearchLegs,
    QueryVectors,
    KeywordLeg,
    VectorLeg,
    SearchReads,
    SearchPool,
    {
      provide: PostingsCache,
      inject: [SEARCH_CONFIG],
      useFactory: (config: SearchConfig) => new PostingsCache(postingsIn(config.postingsCacheMiB)),
    },
  ],
  exports: [SearchLegs, QueryVectors, KeywordLeg, SearchReads],
})
export class SearchLegsModule {}
