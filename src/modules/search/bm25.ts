import type { Postings } from 'src/modules/chunk-index/postings.repository.js';

export interface Bm25Parameters {
  k1: number;
  b: number;
}

export interface Scored {
  chunk: number;
  score: number;
}

/** Ranks before: a higher score, or the same score and a lower chunk (a stable order for ties). */
function ranksBefore(chunk: number, score: number, other: Scored): boolean {
  return score > other.score || (score === other.score && chunk < other.chunk);
}

function before(a: Scored, b: Scored): boolean {
  return ranksBefore(a.chunk, a.score, b);
}

/**
 * Okapi BM25's arithmetic for one dataset snapshot, in one place for every scorer, so that they all
 * compute the same numbers:
 *   score(c) = Σ_t idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·len(c)/avgdl)),
 *   idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5)).
 */
class Bm25Weights {
  private readonly fixed: number;
  private readonly perLength: number;

  constructor(
    private readonly chunkCount: number,
    totalLength: number,
    private readonly parameters: Bm25Parameters,
  ) {
    const { k1, b } = parameters;
    this.fixed = k1 * (1 - b);
    this.perLength = (k1 * b) / (totalLength / Math.max(chunkCount, 1));
  }

  /** idf(t)·(k1+1) for a term held by `df` chunks. */
  weight(df: number): number {
    return Math.log(1 + (this.chunkCount - df + 0.5) / (df + 0.5)) * (this.parameters.k1 + 1);
  }

  /** A term's share of a chunk's score. */
  score(weight: number, tf: number, length: number): number {
    return (weight * tf) / (tf + this.fixed + this.perLength * length);
  }
}

/**
 * The `k` best-ranked chunks offered so far, in a binary heap whose root is the worst of them: keeping
 * the k best of n is O(n log k), and a query with common terms matches tens of thousands of chunks
 * for a few dozen results.
 */
class TopK {
  private readonly heap: Scored[] = [];

  constructor(private readonly k: number) {}

  /** The score to beat once full; a tie enters only with a lower chunk than the worst kept. */
  get threshold(): number {
    return this.heap.length < this.k ? -Infinity : this.heap[0].score;
  }

  offer(chunk: number, score: number): void {
    const heap = this.heap;
    if (heap.length < this.k) {
      heap.push({ chunk, score });
      for (let i = heap.length - 1; i > 0 && before(heap[(i - 1) >> 1], heap[i]); i = (i - 1) >> 1) {
        [heap[i], heap[(i - 1) >> 1]] = [heap[(i - 1) >> 1], heap[i]];
      }
    } else if (this.k > 0 && ranksBefore(chunk, score, heap[0])) {
      heap[0] = { chunk, score };
      for (let i = 0; ;) {
        const left = 2 * i + 1;
        let worst = i;
        if (left < heap.length && before(heap[worst], heap[left])) worst = left;
        if (left + 1 < heap.length && before(heap[worst], heap[left + 1])) worst = left + 1;
        if (worst === i) break;
        [heap[i], heap[worst]] = [heap[worst], heap[i]];
        i = worst;
      }
    }
  }

  /** Best first. */
  ranked(): Scored[] {
    return [...this.heap].sort((x, y) => (before(x, y) ? -1 : 1));
  }
}

/** Where `rankBm25` adds up each matching chunk's score, then takes the `k` best. */
interface Accumulator {
  /** Chunks with a score so far. */
  readonly count: number;
  /** Adds one term's share to the score of every chunk in its postings. */
  addTerm(postings: Postings, weight: number, bm25: Bm25Weights): void;
  /** The `k` best chunks, of those in `only` when given. */
  best(k: number, only?: ReadonlySet<number>): Scored[];
}

/**
 * An open-addressing hash table over one typed array of interleaved (chunk, score) pairs, with the
 * list of slots in use so that clearing it costs what was used: for postings spread thinly over a
 * wide range of chunks. Kept between calls (scoring is synchronous, so no two calls share it at once):
 * a fresh megabyte per query made the garbage collector cost as much as the scoring.
 */
class HashAccumulator implements Accumulator {
  private table = new Float64Array(0);
  private used = new Int32Array(0);
  private mask = 0;
  count = 0;

  reset(entries: number): this {
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
    return this;
  }

  addTerm({ chunks, tf, length }: Postings, weight: number, bm25: Bm25Weights): void {
    for (let i = 0; i < chunks.length; i++) this.add(chunks[i], bm25.score(weight, tf[i], length[i]));
  }

  /** Adds to a chunk's score. Chunk seqs are positive, so 0 marks a free slot. */
  private add(chunk: number, score: number): void {
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

  best(k: number, only?: ReadonlySet<number>): Scored[] {
    const top = new TopK(k);
    const { table, used } = this;
    let threshold = -Infinity;
    for (let n = 0; n < this.count; n++) {
      const slot = used[n];
      const score = table[2 * slot + 1];
      if (score < threshold) continue; // most entries: not even a tie with the worst kept
      if (only && !only.has(table[2 * slot])) continue;
      top.offer(table[2 * slot], score);
      threshold = top.threshold;
    }
    return top.ranked();
  }
}

/**
 * One score per chunk of the range the postings span, indexed by chunk − first. A dataset's chunks
 * take seqs close together, and PostgreSQL hands each term's postings over in chunk order in practice
 * (the primary key's; only the speed depends on it), so adding a term walks this array forwards.
 * Between two queries the service's other work pushes the scores out of the CPU's caches; a hash
 * table then pays a miss per posting, at random, where a forward walk is fetched ahead (docs/search.md). Every BM25 share is positive, so a
 * score of 0 means no match. Kept between calls like the hash table, zeroed over the range used.
 */
class DenseAccumulator implements Accumulator {
  private scores = new Float64Array(0);
  private first = 0;
  private span = 0;
  count = 0;

  reset(first: number, span: number): this {
    if (span > this.scores.length || (span < this.scores.length / 8 && this.scores.length > 1 << 16)) {
      this.scores = new Float64Array(span);
    } else {
      this.scores.fill(0, 0, this.span);
    }
    this.first = first;
    this.span = span;
    this.count = 0;
    return this;
  }

  addTerm({ chunks, tf, length }: Postings, weight: number, bm25: Bm25Weights): void {
    const { scores, first } = this;
    let count = this.count;
    for (let i = 0; i < chunks.length; i++) {
      const at = chunks[i] - first;
      if (scores[at] === 0) count++;
      scores[at] += bm25.score(weight, tf[i], length[i]);
    }
    this.count = count;
  }

  best(k: number, only?: ReadonlySet<number>): Scored[] {
    const top = new TopK(k);
    const { scores, first, span } = this;
    let threshold = Number.MIN_VALUE; // skips the chunks without a score
    for (let at = 0; at < span; at++) {
      const score = scores[at];
      if (score < threshold) continue;
      if (only && !only.has(first + at)) continue;
      top.offer(first + at, score);
      threshold = Math.max(top.threshold, Number.MIN_VALUE);
    }
    return top.ranked();
  }
}

/**
 * The dense array is used while the postings' range is at most this many times their number: walking
 * and zeroing the range then costs less than hashing every posting. Its size is capped (32 MiB).
 */
const DENSE_SPAN_PER_POSTING = 16;
const DENSE_MAX_SPAN = 1 << 22;

const hashed = new HashAccumulator();
const dense = new DenseAccumulator();

/** The accumulator for these postings, emptied. */
function accumulatorFor(terms: Postings[]): Accumulator {
  let postings = 0;
  let low = Infinity;
  let high = -Infinity;
  for (const { chunks } of terms) {
    postings += chunks.length;
    for (let i = 0; i < chunks.length; i++) {
      if (chunks[i] < low) low = chunks[i];
      if (chunks[i] > high) high = chunks[i];
    }
  }
  const span = high - low + 1;
  return postings > 0 && span <= DENSE_MAX_SPAN && span <= DENSE_SPAN_PER_POSTING * postings
    ? dense.reset(low, span)
    : hashed.reset(postings);
}

/**
 * The BM25 a chunk would reach holding every one of the query's terms at saturation (tf → ∞, where a
 * term's share tends to idf·(k1+1) whatever the chunk's length): the ceiling that keyword relevance is
 * measured against. `dfs` holds each distinct query term's document frequency, 0 for a term the
 * dataset does not hold, which counts with the idf it would have.
 */
export function bm25Ceiling(dfs: number[], chunkCount: number, parameters: Bm25Parameters): number {
  const bm25 = new Bm25Weights(chunkCount, chunkCount, parameters); // only its idf weights are used
  return dfs.reduce((sum, df) => sum + bm25.weight(df), 0);
}

/**
 * Okapi BM25 (see `Bm25Weights`) of every chunk that holds at least one of the query's terms, where
 * df(t) is the number of the term's postings, and N and avgdl are the dataset's chunk count and
 * average chunk length, all read in the same snapshot. Each term counts once, whatever its
 * frequency in the query. The terms are added in the order given: a caller that wants the same
 * scores to the last bit, and so the same order of ties, gives them in the same order each time.
 * Returns the `k` best, best first (of the chunks in `only`, when given: the statistics stay the
 * dataset's), and how many chunks matched.
 */
export function rankBm25(
  terms: Postings[],
  chunkCount: number,
  totalLength: number,
  parameters: Bm25Parameters,
  k: number,
  only?: ReadonlySet<number>,
): { ranked: Scored[]; matched: number } {
  const accumulator = accumulatorFor(terms);
  const bm25 = new Bm25Weights(chunkCount, totalLength, parameters);
  for (const postings of terms) accumulator.addTerm(postings, bm25.weight(postings.chunks.length), bm25);
  return { ranked: accumulator.best(k, only), matched: accumulator.count };
}
