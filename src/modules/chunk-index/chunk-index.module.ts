import { Module } from '@nestjs/common';
import { ChunkExportRepository } from 'src/modules/chunk-index/chunk-export.repository.js';
import { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import { ChunkReadsRepository } from 'src/modules/chunk-index/chunk-reads.repository.js';
import { ChunkVectorsRepository } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import { DatasetVectorIndexRepository } from 'src/modules/chunk-index/dataset-vector-index.repository.js';
import { FusionChoiceRepository } from 'src/modules/chunk-index/fusion-choice.repository.js';
import { IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';
import { LexemesRepository } from 'src/modules/chunk-index/lexemes.repository.js';
import { PassagesRepository } from 'src/modules/chunk-index/passages.repository.js';
import { PostingsRepository } from 'src/modules/chunk-index/postings.repository.js';

/**
 * The search index: chunks, their vectors, BM25 postings and statistics, each dataset's index state
 * (`dataset_index`) and fusion weights (`dataset_fusion`), and the lexemes they are taken from. This module holds every statement over these
 * tables: writes through `ChunkIndexRepository` (the vectors of chunks indexed earlier through
 * `ChunkVectorsRepository`), the state's reads through `IndexStateRepository`, a search's reads
 * through `PostingsRepository` (postings) and `ChunkReadsRepository` (chunks, nearest chunks, the
 * filters' counts), chunks read as passages to cite and read (MCP, and a document's text and chunks over REST)
 * through `PassagesRepository`; texts parsed as the index parses them, to highlight what a query
 * matched, through `LexemesRepository`; a dataset's chunks read out for an export through
 * `ChunkExportRepository`; the
 * HNSW indexes of single large datasets are built and dropped through `DatasetVectorIndexRepository`.
 * Features import this module, and it imports none of them.
 */
@Module({
  providers: [
    ChunkIndexRepository,
    ChunkReadsRepository,
    IndexStateRepository,
    FusionChoiceRepository,
    ChunkVectorsRepository,
    DatasetVectorIndexRepository,
    PostingsRepository,
    PassagesRepository,
    LexemesRepository,
    ChunkExportRepository,
  ],
  exports: [
    ChunkIndexRepository,
    ChunkReadsRepository,
    IndexStateRepository,
    FusionChoiceRepository,
    ChunkVectorsRepository,
    DatasetVectorIndexRepository,
    PostingsRepository,
    PassagesRepository,
    LexemesRepository,
    ChunkExportRepository,
  ],
})
export class ChunkIndexModule {}
