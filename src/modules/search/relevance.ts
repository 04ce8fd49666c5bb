/**
 * The score's meaning: every leg's evidence is mapped onto the contract's scale (0.9-1.0 excellent,
 * 0.7-0.9 good, 0.5-0.7 moderate, below 0.5 weak) by calibration points, so that a score means the
 * same for every query and dataset (docs/search.md, "The score").
 */

/** Points (evidence, relevance), both ascending, joined by straight lines and flat beyond the ends. */
export type Calibration = readonly (readonly [evidence: number, relevance: number])[];

export function calibrated(evidence: number, points: Calibration): number {
  // NaN (the cosine of a zero vector) is no evidence.
  if (!(evidence > points[0][0])) return points[0][1];
  for (let i = 1; i < points.length; i++) {
    const [x1, y1] = points[i];
    if (evidence <= x1) {
      const [x0, y0] = points[i - 1];
      return y0 + ((y1 - y0) * (evidence - x0)) / (x1 - x0);
    }
  }
  return points[points.length - 1][1];
}

/**
 * Keyword evidence: BM25 as a share of the query's ceiling (`bm25Ceiling`), times the square root of
 * the query's distinct terms. The share alone says too much of short queries: a chunk that happens to
 * hold the one word of "if not seconds:" reaches most of its ceiling, where a chance match of a long
 * query reaches a small share of it (chance shares shrink like 1/√terms). Points measured by
 * `npm run bench:relevance` on SciFact and off-topic queries (docs/search.md, "The score").
 */
export const KEYWORD_CALIBRATION: Calibration = [
  [0, 0],
  [0.75, 0.5],
  [1.2, 0.7],
  [1.8, 0.9],
  [3, 1],
];

/** A keyword hit's relevance: its BM25, its query's ceiling and the query's number of distinct terms. */
export function keywordRelevance(bm25: number, ceiling: number, terms: number): number {
  return ceiling > 0 ? calibrated((bm25 / ceiling) * Math.sqrt(terms), KEYWORD_CALIBRATION) : 0;
}

/** OpenAI's text-embedding-3 models, small and large alike. */
const TEXT_EMBEDDING_3: Calibration = [
  [0.1, 0],
  [0.45, 0.5],
  [0.7, 0.9],
  [1, 1],
];

/**
 * Cosine similarity to relevance, per embedding model, where their similarities are known to lie:
 * where unrelated texts fall (relevance 0), where texts begin to be about the same thing (0.5), and
 * a near paraphrase (0.9). Models' similarities differ widely: unrelated passages sit near 0.1 for
 * OpenAI's text-embedding-3 models and near 0.7 for ada-002. `SEMANTIC_CALIBRATION` adds or replaces
 * models' points.
 */
export const SEMANTIC_CALIBRATIONS: Readonly<Record<string, Calibration>> = {
  'text-embedding-3-small': TEXT_EMBEDDING_3,
  'text-embedding-3-large': TEXT_EMBEDDING_3,
  'text-embedding-ada-002': [
    [0.7, 0],
    [0.8, 0.5],
    [0.92, 0.9],
    [1, 1],
  ],
  'Xenova/bge-small-en-v1.5': [
    [0.4, 0],
    [0.65, 0.5],
    [0.85, 0.9],
    [1, 1],
  ],
  'Xenova/all-MiniLM-L6-v2': [
    [0.05, 0],
    [0.4, 0.5],
    [0.7, 0.9],
    [1, 1],
  ],
  // Measured by bench:relevance on SciFact train and the off-topic queries (docs/search.md, The score).
  'minishlab/potion-base-2M': [
    [0.4, 0],
    [0.665, 0.5],
    [0.85, 0.9],
    [1, 1],
  ],
};

/** For a model without points of its own. */
export const DEFAULT_SEMANTIC_CALIBRATION: Calibration = [
  [0.2, 0],
  [0.5, 0.5],
  [0.8, 0.9],
  [1, 1],
];

/** The model's points: those configured for it, else built in, else configured for `*`, else the default. */
export function semanticCalibration(
  model: string,
  configured: Readonly<Record<string, Calibration>>,
): Calibration {
  const own = (table: Readonly<Record<string, Calibration>>, name: string) =>
    Object.hasOwn(table, name) ? table[name] : undefined;
  return (
    own(configured, model) ??
    own(SEMANTIC_CALIBRATIONS, model) ??
    own(configured, '*') ??
    DEFAULT_SEMANTIC_CALIBRATION
  );
}
