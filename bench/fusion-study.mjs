// The offline part of `bench:relevance`'s fusion study: each leg's own ranking of a query (keyword
// and semantic modes, with `explain`), fused here by each candidate fusion at weights from 0 to 1, and
// judged: the fusions the service could use, side by side (docs/search.md, Fusion and the score).
const WEIGHTS = Array.from({ length: 11 }, (_, i) => i / 10);
const RRF_K = 60;

/** Each leg's ranking of `query`: the chunks, their documents, ranks, raw scores and relevance. */
export async function legLists(ask, query, depth = 300) {
  const list = async (mode) =>
    (await ask(query, mode, depth)).map((hit, i) => ({
      chunk: hit.chunk_id,
      doc: hit.metadata.source_id,
      rank: i + 1,
      score: mode === 'keyword' ? hit.keyword_score : hit.semantic_score,
      relevance: mode === 'keyword' ? hit.keyword_relevance : hit.semantic_relevance,
    }));
  return { keyword: await list('keyword'), semantic: await list('semantic') };
}

/** Fusions of two legs by the semantic side's weight `w`: each chunk's fused value from its places. */
export const FUSIONS = {
  rrf: (k, s, w) => (k ? (1 - w) / (RRF_K + k.rank) : 0) + (s ? w / (RRF_K + s.rank) : 0),
  convex_relevance: (k, s, w) => (1 - w) * (k?.relevance ?? 0) + w * (s?.relevance ?? 0),
  convex_min_max: (k, s, w) => (1 - w) * (k?.normalised ?? 0) + w * (s?.normalised ?? 0),
  // The service's: each score over the leg's best, a chunk the leg did not rank at the leg's lowest.
  convex_share_of_best: (k, s, w, floors) =>
    (1 - w) * (k?.share ?? floors.keyword) + w * (s?.share ?? floors.semantic),
};

/** The documents in the order `fusion` ranks the chunks of both legs at weight `w`. */
export function fusedDocuments(lists, fusion, w) {
  const places = new Map();
  const floors = {};
  for (const leg of ['keyword', 'semantic']) {
    const scores = lists[leg].map((hit) => hit.score);
    const [low, high] = [Math.min(...scores), Math.max(...scores)];
    floors[leg] = high > 0 ? low / high : 0;
    for (const hit of lists[leg]) {
      const entry = places.get(hit.chunk) ?? { doc: hit.doc };
      entry[leg] = {
        ...hit,
        normalised: high > low ? (hit.score - low) / (high - low) : 1,
        share: hit.score / high,
      };
      places.set(hit.chunk, entry);
    }
  }
  const ranked = [...places.values()]
    .map((entry) => ({ doc: entry.doc, value: FUSIONS[fusion](entry.keyword, entry.semantic, w, floors) }))
    .sort((a, b) => b.value - a.value);
  return [...new Set(ranked.map((entry) => entry.doc))];
}

/**
 * For each fusion and weight, the mean of `metric(ranking, relevant)` over the judged queries
 * (`judged`: [lists, relevant] pairs).
 */
export function sweep(judged, metric) {
  const table = {};
  for (const fusion of Object.keys(FUSIONS)) {
    table[fusion] = {};
    for (const w of WEIGHTS) {
      const total = judged.reduce(
        (sum, [lists, relevant]) => sum + metric(fusedDocuments(lists, fusion, w), relevant),
        0,
      );
      table[fusion][w.toFixed(1)] = Math.round((total / judged.length) * 10000) / 10000;
    }
  }
  return table;
}

/** The weight with the best figure in a sweep's row (the smaller semantic weight on a tie). */
export function bestWeight(row) {
  return Object.entries(row)
    .map(([w, figure]) => [Number(w), figure])
    .sort((a, b) => a[0] - b[0])
    .reduce((best, entry) => (entry[1] > best[1] ? entry : best), [0, -1]);
}
