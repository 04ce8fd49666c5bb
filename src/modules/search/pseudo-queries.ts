/** Words a pseudo-query's sentence must have, at least and at most. */
const SENTENCE_WORDS = { min: 8, max: 40 };

/** The share of a sentence's words a pseudo-query keeps (docs/search.md, Weights chosen per dataset). */
export const KEPT_SHARE = 0.5;

const sentences = new Intl.Segmenter(undefined, { granularity: 'sentence' });

/**
 * A known-item pseudo-query from a chunk's text: one of its sentences of 8-40 words, chosen by
 * `seed`, with about half its words left out, the rest in their order. Verbatim sentences are found
 * by their exact words every time, which would judge the keyword leg alone best whatever the model;
 * a real query shares some of its answer's words, not all of them. Null for a chunk without such a
 * sentence. The same chunk and seed always give the same query.
 */
export function pseudoQuery(text: string, seed: number): string | null {
  const candidates = [...sentences.segment(text)]
    .map((part) => part.segment.trim().split(/\s+/u))
    .filter((words) => words.length >= SENTENCE_WORDS.min && words.length <= SENTENCE_WORDS.max);
  if (candidates.length === 0) return null;
  const next = random(seed);
  const words = candidates[Math.floor(next() * candidates.length)];
  const kept = words.filter(() => next() < KEPT_SHARE);
  return kept.length >= 2 ? kept.join(' ') : words.slice(0, 4).join(' ');
}

/** A small seeded generator (mulberry32): the same choices for the same seed. */
function random(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
