import { type ConfigOf, int, section, url } from 'src/config/define.js';

export const databaseSection = section('DATABASE_CONFIG', {
  title: 'Database',
  variables: {
    url: url('DATABASE_URL', {
      protocols: ['postgres:', 'postgresql:'],
      default: 'postgres://postgres@127.0.0.1:5432/dataset_search',
      description:
        'PostgreSQL 15+ with pgvector 0.8+, a database encoded in UTF-8 (checked before migrating)',
    }),
    /** How long the first connection at start-up may take before the process gives up, saying why. */
    connectTimeoutMs: int('DATABASE_CONNECT_TIMEOUT_MS', {
      default: 5_000,
      min: 100,
      max: 120_000,
      description:
        'how long the first connection of the server or the command line may take before it stops, saying ' +
        'where it looked and what to check',
    }),
    /** Connections of the main pool (every statement but searches'), per process. */
    poolSize: int('DATABASE_POOL_SIZE', {
      default: 20,
      min: 1,
      max: 500,
      description:
        "connections of a process's main pool (all statements but searches'); a request that waits 10 s for " +
        'one is answered 503 `database_unavailable`',
    }),
  },
});

export const DATABASE_CONFIG = databaseSection.token;
export type DatabaseConfig = ConfigOf<typeof databaseSection>;
