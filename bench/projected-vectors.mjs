// Vectors with structure for `bench:scale`: each text's TF-IDF vector over its corpus's vocabulary,
// projected to `dimensions` by a fixed Gaussian matrix drawn from a seed, and normalised. A random
// projection keeps cosines to within about 1/√dimensions (Johnson-Lindenstrauss): texts that share
// rare words are neighbours, and the recall of a graph walk means something, unlike on random unit
// vectors (a walk's worst case). No weights are needed; none of a real model exist on this machine.
import { words } from './lexical-embedder.mjs';
import { gaussian, mulberry32 } from './lib.mjs';

/**
 * The model of `corpus` (the texts whose words make the vocabulary and its idf): `embed(text)`, a
 * unit Float32Array, or null for a text none of whose words the corpus holds.
 */
export function tfidfProjection(corpus, { dimensions = 384, seed = 1 } = {}) {
  const df = new Map();
  for (const text of corpus) for (const word of new Set(words(text))) df.set(word, (df.get(word) ?? 0) + 1);
  const vocabulary = new Map([...df.keys()].sort().map((word, i) => [word, i]));
  const idf = new Float64Array(vocabulary.size);
  for (const [word, i] of vocabulary) idf[i] = Math.log(corpus.length / df.get(word));
  // Row i: the direction word i adds to a text's vector.
  const matrix = new Float32Array(vocabulary.size * dimensions);
  const uniform = mulberry32(seed);
  for (let i = 0; i < matrix.length; i++) matrix[i] = gaussian(uniform);

  const embed = (text) => {
    const counts = new Map();
    for (const word of words(text)) {
      const i = vocabulary.get(word);
      if (i !== undefined) counts.set(i, (counts.get(i) ?? 0) + 1);
    }
    const sum = new Float64Array(dimensions);
    for (const [i, tf] of counts) {
      const weight = (1 + Math.log(tf)) * idf[i];
      for (let d = 0, row = i * dimensions; d < dimensions; d++) sum[d] += weight * matrix[row + d];
    }
    return normalised(sum);
  };
  return { embed, vocabulary: vocabulary.size, dimensions };
}

/**
 * `vector` moved by a random offset of length `noise` drawn from `seed`, normalised again: one text's
 * copies as distinct vectors (cosine about 1 / √(1 + noise²) to the text's), so that no two chunks
 * tie and each copy keeps the text's neighbours.
 */
export function perturbed(vector, seed, noise) {
  const uniform = mulberry32(seed);
  const offset = Float64Array.from(vector, () => gaussian(uniform));
  let length = 0;
  for (const x of offset) length += x * x;
  const scale = noise / Math.sqrt(length);
  return normalised(offset.map((x, d) => vector[d] + scale * x));
}

/** A direction drawn from `seed`: for a text that has no word of the vocabulary. */
export function randomDirection(seed, dimensions) {
  const uniform = mulberry32(seed);
  return normalised(Float64Array.from({ length: dimensions }, () => gaussian(uniform)));
}

function normalised(values) {
  let norm = 0;
  for (const x of values) norm += x * x;
  if (norm === 0) return null;
  norm = Math.sqrt(norm);
  return Float32Array.from(values, (x) => x / norm);
}
