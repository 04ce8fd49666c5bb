import { type ConfigOf, int, section } from 'src/config/define.js';

export const ingestionSection = section('INGESTION_CONFIG', {
  title: 'Ingestion',
  variables: {
    /** Documents one worker process handles at once. */
    concurrency: int('INGEST_CONCURRENCY', {
      default: 2,
      min: 1,
      max: 64,
      description: 'documents one worker processes at once',
    }),
    /** A processing document whose job has not reported for this long is looked at by the recovery sweep. */
    staleAfterSeconds: int('INGEST_STALE_AFTER_SECONDS', {
      default: 120,
      min: 5,
      max: 86_400,
      description: 'a processing document silent this long is checked by the recovery sweep',
    }),
    /** Times a document is started again after its worker died, before it fails with processing_error. */
    maxRecoveries: int('INGEST_MAX_RECOVERIES', {
      default: 3,
      min: 0,
      max: 100,
      description: 'restarts of a dead run before it fails with `processing_error`',
    }),
    extractionTimeoutSeconds: int('EXTRACTION_TIMEOUT_SECONDS', {
      default: 120,
      min: 1,
      max: 3_600,
      description: 'a file whose text takes longer to read fails with `extraction_limit_exceeded`',
    }),
    /** The heap of an extraction thread. */
    extractionMemoryMiB: int('EXTRACTION_MEMORY_MB', {
      default: 2_048,
      min: 64,
      max: 65_536,
      description:
        'heap of each extraction thread; a file that needs more fails with `extraction_limit_exceeded`',
    }),
  },
});

export const INGESTION_CONFIG = ingestionSection.token;
export type IngestionConfig = ConfigOf<typeof ingestionSection>;
