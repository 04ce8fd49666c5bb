/**
 * Retrieval measures at document level, computed as `bench/relevance.mjs` computes them (its `measure`
 * and `ndcg`), so that the evaluation endpoint and the benchmark give the same figures for the same
 * rankings: the same operations in the same order, down to the last bit of each per-query figure.
 */

/** How relevant each judged document is: its grade, the gain nDCG counts for it (at least 1). */
export type Judgements = ReadonlyMap<string, number>;

/** One query's figures, or their means over a set of queries. */
export interface Figures {
  ndcg_at_10: number;
  recall_at_100: number;
  mrr_at_10: number;
}

/**
 * The documents of a ranking of chunks, best first, each at its first chunk: of the first `depth`
 * chunks whose document is known (`undefined`: a chunk deleted since it was ranked, which a search
 * leaves out and replaces with the next, as `withRows` does).
 */
export function rankedDocuments(chunkDocuments: Iterable<string | undefined>, depth: number): string[] {
  const documents = new Set<string>();
  let chunks = 0;
  for (const document of chunkDocuments) {
    if (chunks === depth) break;
    if (document === undefined) continue;
    chunks++;
    documents.add(document);
  }
  return [...documents];
}

/**
 * nDCG@10 with graded gains: the gain of the document at rank i (from 0) counts `grade / log2(i + 2)`,
 * against the best order of the judged grades.
 */
export function ndcgAt10(ranking: readonly string[], relevant: Judgements): number {
  const dcg = ranking
    .slice(0, 10)
    .reduce((sum, id, i) => sum + (relevant.get(id) ?? 0) / Math.log2(i + 2), 0);
  const ideal = [...relevant.values()]
    .sort((a, b) => b - a)
    .slice(0, 10)
    .reduce((sum, grade, i) => sum + grade / Math.log2(i + 2), 0);
  return ideal === 0 ? 0 : dcg / ideal;
}

/** The share of the relevant documents among the first 100 documents. */
export function recallAt100(ranking: readonly string[], relevant: Judgements): number {
  return ranking.slice(0, 100).filter((id) => relevant.has(id)).length / relevant.size;
}

/** 1 / the rank of the first relevant document among the first 10, else 0. */
export function mrrAt10(ranking: readonly string[], relevant: Judgements): number {
  const first = ranking.slice(0, 10).findIndex((id) => relevant.has(id));
  return first === -1 ? 0 : 1 / (first + 1);
}

/** A query's three figures, unrounded: means of them over pages of queries are then exact. */
export function figuresOf(ranking: readonly string[], relevant: Judgements): Figures {
  return {
    ndcg_at_10: ndcgAt10(ranking, relevant),
    recall_at_100: recallAt100(ranking, relevant),
    mrr_at_10: mrrAt10(ranking, relevant),
  };
}

/** The figures' means over queries (at least one), to 4 decimals as the benchmark gives them. */
export function meanFigures(queries: readonly Figures[]): Figures {
  const mean = (pick: (figures: Figures) => number) =>
    round4(queries.reduce((sum, figures) => sum + pick(figures), 0) / queries.length);
  return {
    ndcg_at_10: mean((figures) => figures.ndcg_at_10),
    recall_at_100: mean((figures) => figures.recall_at_100),
    mrr_at_10: mean((figures) => figures.mrr_at_10),
  };
}

export function round4(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}
