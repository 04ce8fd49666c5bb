import { type ConfigOf, custom, int, number, type Reading, section } from 'src/config/define.js';

/**
 * A JSON object of calibration lists by model name: each a list of at least two [cosine, relevance]
 * points, cosine ascending within -1..1, relevance within 0..1 and never descending.
 */
function parseCalibrations(value: string | undefined, reading: Reading): Record<string, [number, number][]> {
  if (value === undefined) return {};
  const problem = (issue: string) => {
    reading.problem(`SEMANTIC_CALIBRATION ${issue}`);
    return {};
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    // not JSON: refused below, as any other value that is not an object
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return problem('must be a JSON object of model name to [[cosine, relevance], ...]');
  for (const [model, points] of Object.entries(parsed)) {
    const issue = calibrationIssue(points);
    if (issue) return problem(`["${model}"] ${issue}`);
  }
  return parsed as Record<string, [number, number][]>;
}

function calibrationIssue(points: unknown): string | null {
  if (!Array.isArray(points) || points.length < 2)
    return 'must be a list of at least two [cosine, relevance] points';
  let previous: number[] | undefined;
  for (const [i, point] of points.entries()) {
    if (!Array.isArray(point) || point.length !== 2 || !point.every((n) => typeof n === 'number'))
      return `point ${i} must be [cosine, relevance], two numbers`;
    const [x, y] = point;
    if (x < -1 || x > 1 || y < 0 || y > 1)
      return `point ${i} must have a cosine in -1..1 and a relevance in 0..1`;
    if (previous && (x <= previous[0] || y < previous[1]))
      return `point ${i} must follow point ${i - 1}: cosine ascending, relevance not descending`;
    previous = point;
  }
  return null;
}

export const searchSection = section('SEARCH_CONFIG', {
  title: 'Search',
  variables: {
    bm25K1: number('BM25_K1', {
      default: 1.2,
      min: 0,
      max: 10,
      description: 'BM25 parameter k1 (docs/search.md)',
    }),
    bm25B: number('BM25_B', {
      default: 0.6,
      min: 0,
      max: 1,
      description: 'BM25 parameter b (docs/search.md)',
    }),
    /**
     * Calibration points (cosine, relevance) by embedding model, `*` for any model without its own,
     * over the built-in ones (`SEMANTIC_CALIBRATIONS`).
     */
    semanticCalibrations: custom('SEMANTIC_CALIBRATION', {
      defaultText: 'built in',
      description:
        'JSON of embedding model name (`*` for any other) to `[[cosine, relevance], ...]` points: where the ' +
        "model's cosine similarities fall on the score guide (docs/search.md, Fusion and the score)",
      parse: parseCalibrations,
    }),
    timeoutMs: int('SEARCH_TIMEOUT_MS', {
      default: 10_000,
      min: 1,
      max: 60_000,
      description:
        'deadline of a whole search request: past it, 504 `query_timeout` and its statements cancelled in ' +
        'PostgreSQL',
    }),
    batchConcurrency: int('SEARCH_BATCH_CONCURRENCY', {
      default: 4,
      min: 1,
      max: 10,
      description: 'queries of one batch run at once',
    }),
    /** Memory for term postings kept by the keyword leg (0: none kept). */
    postingsCacheMiB: int('SEARCH_POSTINGS_CACHE_MB', {
      default: 256,
      min: 0,
      max: 65_536,
      description: 'memory per API process for term postings kept between queries (0: none)',
    }),
    /** Postings of the most frequent terms read into memory at start-up (0: none). */
    postingsWarmMiB: int('SEARCH_POSTINGS_WARM_MB', {
      default: 64,
      min: 0,
      max: 65_536,
      description:
        'postings of the most frequent terms an API process reads into memory before it listens (0: none)',
    }),
    /** Connections of the search pool (see SearchPool), beside the main pool's. */
    poolSize: int('SEARCH_DB_POOL_SIZE', {
      default: 10,
      min: 1,
      max: 200,
      description:
        'database connections of an API process for searches, beside the main pool (`DATABASE_POOL_SIZE`); ' +
        'a search that cannot get one before its deadline is answered 504 `query_timeout`',
    }),
    fusionTuningIntervalSeconds: int('FUSION_TUNING_INTERVAL_SECONDS', {
      default: 30,
      min: 1,
      max: 86_400,
      description:
        'how often a worker looks for datasets whose fusion weights are due to be chosen from their own documents ' +
        '(docs/search.md, Weights chosen per dataset)',
    }),
    fusionTuningMinChunks: int('FUSION_TUNING_MIN_CHUNKS', {
      default: 50,
      min: 10,
      max: 10_000_000,
      description:
        'chunks a dataset needs before its fusion weights are chosen; smaller ones keep equal weights',
    }),
  },
});

export const SEARCH_CONFIG = searchSection.token;
export type SearchConfig = ConfigOf<typeof searchSection>;
