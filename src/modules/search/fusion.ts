import type { ChunkRow } from 'src/modules/chunk-index/chunk-reads.repository.js';
import type { LegHit } from 'src/modules/search/search.types.js';

/** A chunk's row with what a result shows of its document. */
export type CompleteRow = ChunkRow & { metadata: Record<string, unknown>; filename: string | null };

/** What a result's score is: a leg's relevance, the reranker's, or that of a stronger result below it. */
export type ScoreBasis = 'keyword' | 'semantic' | 'rerank' | 'result_below';

/** How much each leg counts in the order of a hybrid search: two shares that sum to 1. */
export interface FusionWeights {
  keyword: number;
  semantic: number;
}

export const EQUAL_WEIGHTS: FusionWeights = { keyword: 0.5, semantic: 0.5 };

export interface Fused {
  chunkSeq: string;
  /** The chunk's row, from whichever leg read it: a row with its document's fields if any did. */
  row?: ChunkRow;
  /** The weighted sum of the legs' normalised scores (`fuse`), 0..1: the order. */
  fusion: number;
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

const LEGS = ['semantic', 'keyword'] as const;

/**
 * Fuses the legs' ranked candidates. **The order** is a convex combination of each leg's score
 * divided by its best candidate's, `weights.keyword × bm25 / bm25_best + weights.semantic × cos / cos_best`;
 * a chunk one leg did not rank takes that leg's lowest normalised candidate, the most it could have
 * had. Scores, not ranks, are fused, so a weak leg's near-ties cannot reorder a strong leg's clear
 * ranking (docs/search.md, Fusion and the score, has the measurements); ties go to the older chunk.
 * A leg of weight 0 takes no part.
 *
 * **The score** is a relevance on the contract's scale, which means the same for every query:
 * - a chunk's own relevance is the strongest evidence a leg that counts has for it (`LegHit.relevance`);
 * - times its ratio to the best own relevance among the candidates: a result far weaker than the
 *   query's best is less often an answer than its evidence alone says;
 * - the order is the fusion's, so a chunk ranked above a stronger one takes the stronger one's score.
 *   Scores never rise down the list, `min_score` keeps a prefix of it, and the first result scores
 *   the best relevance of any candidate.
 */
export function fuse(
  legs: { semantic?: LegHit[]; keyword?: LegHit[] },
  weights: FusionWeights = EQUAL_WEIGHTS,
): Fused[] {
  const counted = LEGS.filter((leg) => legs[leg] && (weights[leg] > 0 || !legs[other(leg)]));
  const fused = new Map<string, Omit<Fused, 'score' | 'basis' | 'fusion'>>();
  for (const leg of counted) {
    legs[leg]!.forEach((hit, index) => {
      const entry = fused.get(hit.chunkSeq) ?? { chunkSeq: hit.chunkSeq };
      if (hit.row && entry.row?.metadata === undefined) entry.row = hit.row;
      const { score, relevance, ceiling, terms } = hit;
      entry[leg] = { rank: index + 1, score, relevance, ...(leg === 'keyword' && { ceiling, terms }) };
      fused.set(hit.chunkSeq, entry);
    });
  }
  const scales = Object.fromEntries(counted.map((leg) => [leg, normaliser(legs[leg]!)]));
  const share = (leg: (typeof LEGS)[number]) => (counted.length === 1 ? 1 : weights[leg]);
  const ranked = [...fused.values()]
    .map((entry) => ({
      ...entry,
      fusion: counted.reduce((sum, leg) => sum + share(leg) * scales[leg](entry[leg]?.score), 0),
    }))
    .sort((a, b) => b.fusion - a.fusion || Number(a.chunkSeq) - Number(b.chunkSeq))
    .map((entry): Fused => {
      const keyword = counted.includes('keyword') ? (entry.keyword?.relevance ?? 0) : 0;
      const semantic = counted.includes('semantic') ? (entry.semantic?.relevance ?? 0) : 0;
      return counted.includes('keyword') && entry.keyword && keyword >= semantic
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

function other(leg: (typeof LEGS)[number]): (typeof LEGS)[number] {
  return leg === 'keyword' ? 'semantic' : 'keyword';
}

/**
 * A leg's score as a share of its best candidate's, and the lowest such share for a chunk the leg
 * did not rank. A best at or below 0 (cosines can be negative) shifts the scores to start at 0.
 */
function normaliser(hits: LegHit[]): (score: number | undefined) => number {
  const scores = hits.map((hit) => hit.score);
  const high = Math.max(...scores);
  const low = Math.min(...scores);
  const shift = low < 0 ? -low : 0;
  const top = high + shift;
  const of = (score: number) => (top > 0 ? (score + shift) / top : 1);
  const floor = hits.length > 0 ? of(low) : 0;
  return (score) => (score === undefined ? floor : of(score));
}

/**
 * The first `count` of the ranked entries whose chunks still exist, with their rows and their
 * documents' metadata and file names, in order. Each leg brings the rows of the hits that can be shown (see
 * `SearchService.search`); a chunk that both legs ranked below them can still come first in the
 * fusion, and its row is read here with `read`, as is that of a chunk whose row its leg found
 * deleted. A chunk deleted since it was ranked is left out, and the next entries take its place, as
 * do those whose row `accept` turns down (called in order, once per entry with a row).
 */
export async function withRows<T extends Fused>(
  ranked: T[],
  count: number,
  read: (chunkSeqs: string[]) => Promise<Map<string, ChunkRow>>,
  accept?: (row: ChunkRow) => boolean,
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
      if (row && (!accept || accept(row))) {
        complete.push({
          ...entry,
          row: { ...row, metadata: row.metadata ?? {}, filename: row.filename ?? null },
        });
      }
    }
  }
  return complete;
}
