import type { ChunkRow, LegHit } from 'src/modules/search/search.types.js';

/** Reciprocal rank fusion constant (Cormack et al.). */
export const RRF_K = 60;

type CompleteRow = ChunkRow & { metadata: Record<string, unknown> };

export interface Fused {
  chunkSeq: string;
  /** The chunk's row, from whichever leg read it: a row with its document's metadata if any did. */
  row?: ChunkRow;
  rrf: number;
  semantic?: { rank: number; score: number };
  keyword?: { rank: number; score: number };
  rerank?: number;
}

/**
 * Fuses ranked lists by reciprocal rank: Σ 1/(k + rank). The score is that sum divided by its largest
 * possible value (rank 1 in every leg that ran), so it lies in 0..1, a chunk ranked first by both legs
 * scores 1.0, and it means the same for every query.
 */
export function fuse(legs: { semantic?: LegHit[]; keyword?: LegHit[] }): (Fused & { score: number })[] {
  const fused = new Map<string, Fused>();
  const ran = (['semantic', 'keyword'] as const).filter((leg) => legs[leg] !== undefined);
  for (const leg of ran) {
    legs[leg]!.forEach((hit, index) => {
      const entry = fused.get(hit.chunkSeq) ?? { chunkSeq: hit.chunkSeq, rrf: 0 };
      if (hit.row && entry.row?.metadata === undefined) entry.row = hit.row;
      entry.rrf += 1 / (RRF_K + index + 1);
      entry[leg] = { rank: index + 1, score: hit.score };
      fused.set(hit.chunkSeq, entry);
    });
  }
  const best = ran.length / (RRF_K + 1);
  return [...fused.values()]
    .map((entry) => ({ ...entry, score: best > 0 ? entry.rrf / best : 0 }))
    .sort((a, b) => b.rrf - a.rrf || Number(a.chunkSeq) - Number(b.chunkSeq));
}

/**
 * The first `count` of the ranked entries whose chunks still exist, with their rows and their
 * documents' metadata, in order. Each leg brings the rows of the hits that can be shown (see
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
      if (row) complete.push({ ...entry, row: { ...row, metadata: row.metadata ?? {} } });
    }
  }
  return complete;
}
