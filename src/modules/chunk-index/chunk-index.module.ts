import { Module } from '@nestjs/common';
import { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import { PassagesRepository } from 'src/modules/chunk-index/passages.repository.js';
import { PostingsRepository } from 'src/modules/chunk-index/postings.repository.js';

/**
 * The search index: chunks, their vectors, BM25 postings and statistics, and the lexemes they are taken
 * from. Every write of these tables goes through `ChunkIndexRepository`, every read of postings through
 * `PostingsRepository`, and chunks read as passages to cite and read (MCP) through `PassagesRepository`;
 * features import this module, and it imports none of them.
 */
@Module({
  providers: [ChunkIndexRepository, PostingsRepository, PassagesRepository],
  exports: [ChunkIndexRepository, PostingsRepository, PassagesRepository],
})
export class ChunkIndexModule {}
