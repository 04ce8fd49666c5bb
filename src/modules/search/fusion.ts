import type { ChunkRow } from 'src/modules/chunk-index/chunk-reads.repository.js';
import type { LegHit } from 'src/modules/search/search.types.js';

/** Reciprocal rank fusion constant (Cormack et al.). */
export const RRF_K = 60;

/** A chunk's row with what a result shows of its document. */
export type CompleteRow = ChunkRow & { metadata: Record<string, unknown>; filename: string | null };

/** What a result's score is: a leg's relevance, the reranker's, or that of a stronger result below it. */
export type ScoreBasis = 'keyword' | 'semantic' | 'rerank' | 'result_below';

export interface Fused {
  chunkSeq: string;
  /** The chunk's row, from whichever leg read it: a row with its document's fields if any did. */
  row?: ChunkRow;
  /** Σ 1/(k + rank) over the legs that ranked it: the ranking. */
  rrf: number;
  semantic?: LegPlace;
  keyword?: LegPlace & { ceiling?: number; terms?: number };
  rerank?: number;
  score: number;
  basis: ScoreBasis;
}

/** Where a leg ranked a chunk, with the leg's own score and its relevance. */
interface LegPlace {
  rank: number;
  score: number;
  relevance: number;
}

/**
 * Fuses ranked lists by reciprocal rank, Σ 1/(k + rank): the order. The score is a relevance on the
 * contract's scale, which means the same for every query (docs/search.md, Fusion and the score):
 * - a chunk's own relevance is the strongest evidence either leg has for it (`LegHit.relevance`);
 * - times its ratio to the best own relevance among the candidates: a result far weaker than the
 *   query's best is less often an answer than its evidence alone says (measured: the score then
 *   separates relevant results from the others better than the rank does, pooled over queries);
 * - the order is the fusion's, so a chunk ranked above a stronger one (both legs found it, and only
 *   one the other) takes the stronger one's score. Scores never rise down the list, `min_score` keeps
 *   a prefix of it, and the first result scores the best relevance of any candidate.
 */
export function fuse(legs: { semantic?: LegHit[]; keyword?: LegHit[] }): Fused[] {
  const fused = new Map<string, Omit<Fused, 'score' | 'basis'>>();
  for (const leg of ['semantic', 'keyword'] as const) {
    legs[leg]?.forEach((hit, index) => {
      const entry = fused.get(hit.chunkSeq) ?? { chunkSeq: hit.chunkSeq, rrf: 0 };
      if (hit.row && entry.row?.metadata === undefined) entry.row = hit.row;
      entry.rrf += 1 / (RRF_K + index + 1);
      const { score, relevance, ceiling, terms } = hit;
      entry[leg] = { rank: index + 1, score, relevance, ...(leg === 'keyword' && { ceiling, terms }) };
      fused.set(hit.chunkSeq, entry);
    });
  }
  const ranked = [...fused.values()]
    .sort((a, b) => b.rrf - a.rrf || Number(a.chunkSeq) - Number(b.chunkSeq))
    .map((entry): Fused => {
      const keyword = entry.keyword?.relevance ?? 0;
      const semantic = entry.semantic?.relevance ?? 0;
      return entry.keyword && keyword >= semantic
        ? { ...entry, score: keyword, basis: 'keyword' }
        : { ...entry, score: semantic, basis: 'semantic' };
    });
  const best = ranked.reduce((most, entry) => Math.max(most, entry.score), 0);
  let below = 0;
  for (let i = ranked.length - 1; i >= 0; i--) {
    const entry = ranked[i];
    const own = best > 0 ? entry.score * (entry.score / best) : 0;
    if (below > own) Object.assign(entry, { score: below, basis: 'result_below' });
    else below = entry.score = own;
  }
  return ranked;
}

/** The fusion's own measure, Σ 1/(k + rank) over its largest possible value (rank 1 in every leg that ran). */
export function fusionScore(rrf: number, legs: number): number {
  return (rrf * (RRF_K + 1)) / legs;
}

/**
 * The first `count` of the ranked entries whose chunks still exist, with their rows and their
 * documents' metadata and file names, in order. Each leg brings the rows of the hits that can be shown (see
 * `SearchService.search`); a chunk that both legs ranked below them can still come first in the
 * fusion, and its row is read here with `read`, as is that of a chunk whose row its leg found
 * deleted. A chunk deleted since it was ranked is left out, and the next entries take its place.
 */
export async function withRows<T extends Fused>(
  ranked: T[],
  count: number,
  read: (chunkSeqs: string[]) => Promise<Map<string, ChunkRow>>,
): Promise<(T & { row: CompleteRow })[]> {
  const complete: (T & { row: CompleteRow })[] = [];
  for (let next = 0; complete.length < count && next < ranked.length;) {
    const round = ranked.slice(next, next + count - complete.length);
    next += round.length;
    const missing = round.filter((entry) => entry.row?.metadata === undefined);
    const reread =
      missing.length > 0 ? await read(missing.map((entry) => entry.chunkSeq)) : new Map<string, ChunkRow>();
    for (const entry of round) {
      const row = entry.row?.metadata === undefined ? reread.get(entry.chunkSeq) : entry.row;
      if (row) {
        complete.push({
          ...entry,
          row: { ...row, metadata: row.metadata ?? {}, filename: row.filename ?? null },
        });
      }
    }
  }
  return complete;
}
