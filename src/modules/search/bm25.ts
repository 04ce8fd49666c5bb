import type { Postings } from 'src/modules/search/postings-cache.js';

export interface Bm25Parameters {
  k1: number;
  b: number;
}

export interface Scored {
  chunk: number;
  score: number;
}

/** Ranks before: a higher score, or the same score and a lower chunk (a stable order for ties). */
function before(a: Scored, b: Scored): boolean {
  return a.score > b.score || (a.score === b.score && a.chunk < b.chunk);
}

/**
 * The accumulator of `rankBm25`: an open-addressing hash table over one typed array of interleaved
 * (chunk, score) pairs, with the list of slots in use so that clearing it costs what was used. It is
 * kept between calls (scoring is synchronous, so no two calls share it at once): a fresh megabyte per
 * query made the garbage collector cost as much as the scoring.
 */
class Accumulator {
  private table = new Float64Array(0);
  private used = new Int32Array(0);
  private mask = 0;
  count = 0;

  reset(entries: number): void {
    let capacity = 16;
    while (capacity < 2 * entries) capacity *= 2;
    // Grown to the largest query's size, it shrinks back after a much smaller one.
    if (capacity > this.mask + 1 || (capacity < (this.mask + 1) / 8 && this.mask >= 1 << 16)) {
      this.table = new Float64Array(2 * capacity);
      this.used = new Int32Array(capacity);
      this.mask = capacity - 1;
    } else {
      for (let i = 0; i < this.count; i++) this.table[2 * this.used[i]] = 0;
    }
    this.count = 0;
  }

  /** Adds to a chunk's score. Chunk seqs are positive, so 0 marks a free slot. */
  add(chunk: number, score: number): void {
    const table = this.table;
    let slot = Math.imul(chunk | 0, 0x9e3779b1) & this.mask;
    while (table[2 * slot] !== chunk) {
      if (table[2 * slot] === 0) {
        table[2 * slot] = chunk;
        table[2 * slot + 1] = 0;
        this.used[this.count++] = slot;
        break;
      }
      slot = (slot + 1) & this.mask;
    }
    table[2 * slot + 1] += score;
  }

  /**
   * The `k` best-ranked chunks, best first. A heap of the k best so far keeps this O(n log k): a query
   * with common terms scores tens of thousands of chunks for a few dozen results.
   */
  best(k: number): Scored[] {
    // A binary heap whose root is the worst of those kept.
    const heap: Scored[] = [];
    const swap = (i: number, j: number) => ([heap[i], heap[j]] = [heap[j], heap[i]]);
    for (let n = 0; n < this.count && k > 0; n++) {
      const chunk = this.table[2 * this.used[n]];
      const score = this.table[2 * this.used[n] + 1];
      if (heap.length < k) {
        heap.push({ chunk, score });
        for (let i = heap.length - 1; i > 0 && before(heap[(i - 1) >> 1], heap[i]); i = (i - 1) >> 1) {
          swap(i, (i - 1) >> 1);
        }
      } else if (score > heap[0].score || (score === heap[0].score && chunk < heap[0].chunk)) {
        heap[0] = { chunk, score };
        for (let i = 0; ;) {
          const left = 2 * i + 1;
          let worst = i;
          if (left < heap.length && before(heap[worst], heap[left])) worst = left;
          if (left + 1 < heap.length && before(heap[worst], heap[left + 1])) worst = left + 1;
          if (worst === i) break;
          swap(i, worst);
          i = worst;
        }
      }
    }
    return heap.sort((x, y) => (before(x, y) ? -1 : 1));
  }
}

const accumulator = new Accumulator();

/**
 * Okapi BM25 of every chunk that holds at least one of the query's terms:
 *   score(c) = Σ_t idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len(c)/avgdl)),
 *   idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
 * where df(t) is the number of the term's postings, and N and avgdl are the dataset's chunk count and
 * average chunk length, all read in the same snapshot. Each term counts once, whatever its
 * frequency in the query. Returns the `k` best, best first, and how many chunks matched.
 */
export function rankBm25(
  terms: Postings[],
  chunkCount: number,
  totalLength: number,
  { k1, b }: Bm25Parameters,
  k: number,
): { ranked: Scored[]; matched: number } {
  accumulator.reset(terms.reduce((sum, term) => sum + term.chunks.length, 0));
  const averageLength = totalLength / Math.max(chunkCount, 1);
  const fixed = k1 * (1 - b);
  const perLength = (k1 * b) / averageLength;
  for (const { chunks, tf, length } of terms) {
    const df = chunks.length;
    const weight = Math.log(1 + (chunkCount - df + 0.5) / (df + 0.5)) * (k1 + 1);
    for (let i = 0; i < df; i++) {
      accumulator.add(chunks[i], (weight * tf[i]) / (tf[i] + fixed + perLength * length[i]));
    }
  }
  return { ranked: accumulator.best(k), matched: accumulator.count };
}
