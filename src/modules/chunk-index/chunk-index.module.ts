import { Module } from '@nestjs/common';
import { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import { ChunkVectorsRepository } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import { DatasetVectorIndexRepository } from 'src/modules/chunk-index/dataset-vector-index.repository.js';
import { PassagesRepository } from 'src/modules/chunk-index/passages.repository.js';
import { PostingsRepository } from 'src/modules/chunk-index/postings.repository.js';

/**
 * The search index: chunks, their vectors, BM25 postings and statistics, and the lexemes they are taken
 * from. Every write of these tables goes through `ChunkIndexRepository` (the vectors of chunks indexed
 * earlier through `ChunkVectorsRepository`), every read of postings through
 * `PostingsRepository`, and chunks read as passages to cite and read (MCP) through `PassagesRepository`;
the HNSW indexes of single large datasets are built and dropped through `DatasetVectorIndexRepository`;
 * features import this module, and it imports none of them.
 */
@Module({
  providers: [
    ChunkIndexRepository,
    ChunkVectorsRepository,
    DatasetVectorIndexRepository,
    PostingsRepository,
    PassagesRepository,
  ],
  exports: [
    ChunkIndexRepository,
    ChunkVectorsRepository,
    DatasetVectorIndexRepository,
    PostingsRepository,
    PassagesRepository,
  ],
})
export class ChunkIndexModule {}
