import { Module } from '@nestjs/common';
import { ChunkIndexModule } from 'src/modules/chunk-index/chunk-index.module.js';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { ReembedRepository } from 'src/modules/embeddings/reembed.repository.js';
import { ReembedService } from 'src/modules/embeddings/reembed.service.js';

/**
 * Embeddings: the provider chosen at start-up (the local model's threads or an OpenAI-compatible API),
 * chunking by the model's tokenizer, and re-embedding (`datasets reembed`). A static module: ingestion,
 * search, health and the command line import it and share its one EmbeddingService, so a process has
 * one set of model threads.
 */
@Module({
  imports: [ChunkIndexModule],
  providers: [EmbeddingService, ReembedService, ReembedRepository],
  exports: [EmbeddingService, ReembedService],
})
export class EmbeddingsModule {}
