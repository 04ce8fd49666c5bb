import { Module } from '@nestjs/common';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { EmbeddingsModule } from 'src/modules/embeddings/embeddings.module.js';
import { FusionTuningService } from 'src/modules/search/fusion-tuning.service.js';
import { SearchLegsModule } from 'src/modules/search/search-legs.module.js';

/**
 * The choice of each dataset's fusion weights, in the background. Imported where documents are
 * processed (ROLE `all` or `worker`), beside ingestion: the choice follows the documents indexed.
 */
@Module({
  imports: [SearchLegsModule, ChunkIndexModule, EmbeddingsModule],
  providers: [FusionTuningService],
  exports: [FusionTuningService],
})
export class FusionTuningModule {}
