import { type ConfigOf, int, section } from 'src/config/define.js';

/** The vector index's thresholds: the search's vector leg and the workers' index builds both read them. */
const EXACT_SCAN_MAX_CHUNKS = int('SEARCH_EXACT_SCAN_MAX_CHUNKS', {
  default: 20_000,
  min: 0,
  max: 10_000_000,
  description:
    'the largest dataset the vector leg scans exactly, when that costs less than walking the shared HNSW ' +
    'index (docs/search.md); larger ones walk the index first, and are scanned only when the walk comes ' +
    "back with fewer than the leg's candidates (a selective filter, or an index shared with other " +
    'datasets) (0: always the index first)',
});

export const chunkIndexSection = section('CHUNK_INDEX_CONFIG', {
  title: 'Vector index',
  variables: {
    /** The largest dataset the vector leg may scan exactly (see `scansExactly`); larger ones use HNSW. */
    exactScanMaxChunks: EXACT_SCAN_MAX_CHUNKS,
    /** By default every dataset larger than what is scanned exactly gets an index of its own. */
    datasetIndexMinChunks: int('SEARCH_DATASET_INDEX_MIN_CHUNKS', {
      default: (reading) => reading.get(EXACT_SCAN_MAX_CHUNKS),
      defaultText: '`SEARCH_EXACT_SCAN_MAX_CHUNKS`',
      min: 0,
      max: 10_000_000,
      description:
        'the chunks from which a dataset gets an HNSW index of its own besides the shared one, built in the ' +
        'background by a worker (`CREATE INDEX CONCURRENTLY`), so that its searches walk a graph of its own ' +
        'chunks only (docs/search.md) (0: none)',
    }),
    /** `maintenance_work_mem` of a dataset index's build: the graph it can build in memory. */
    datasetIndexBuildMiB: int('SEARCH_DATASET_INDEX_BUILD_MB', {
      default: 512,
      min: 64,
      max: 1_048_576,
      description:
        "PostgreSQL's `maintenance_work_mem` for the build of a dataset's own index: enough for the graph of " +
        'about 350,000 vectors of 384 dimensions; a larger graph is built partly on disk, more slowly ' +
        '(docs/search.md)',
    }),
  },
});

export const CHUNK_INDEX_CONFIG = chunkIndexSection.token;
export type ChunkIndexConfig = ConfigOf<typeof chunkIndexSection>;
