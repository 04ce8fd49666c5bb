import { Module } from '@nestjs/common';
import { DatasetsModule } from 'src/modules/datasets/datasets.module.js';
import { EmbeddingsModule } from 'src/modules/embeddings/embeddings.module.js';
import { ReembeddingController } from 'src/modules/embeddings/reembedding.controller.js';

/** The re-embedding routes of the API; the builds run in the workers (ReembeddingWorker). */
@Module({
  imports: [DatasetsModule, EmbeddingsModule],
  controllers: [ReembeddingController],
})
export class ReembeddingModule {}
