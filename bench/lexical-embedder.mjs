// Controlled vectors for `bench:relevance`: an OpenAI-compatible embeddings endpoint on 127.0.0.1 whose
// "model" hashes a text's words, weighted by their idf in a reference corpus, into a unit vector
// (feature hashing with signs). Texts sharing rare words point the same way and unrelated texts are
// near-orthogonal, as with a real model, but no weights are needed: none exist on this machine.
import { startEmbeddingServer } from './lib.mjs';

const STOP = new Set(
  'a an and are as at be by for from has have in is it its of on or that the this to was were will with which'.split(
    ' ',
  ),
);

/** A text's words as both controlled models read them: lower-cased, stop words out, plurals cut. */
export function words(text) {
  return (text.toLowerCase().match(/[a-z0-9]+/g) ?? [])
    .filter((word) => word.length > 1 && !STOP.has(word))
    .map((word) => (word.length > 4 && word.endsWith('s') ? word.slice(0, -1) : word));
}

function hash(word, seed) {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The model: a function from text to unit vector. */
export function lexicalModel(corpus, dimensions = 384) {
  const df = new Map();
  for (const text of corpus) for (const word of new Set(words(text))) df.set(word, (df.get(word) ?? 0) + 1);
  const idf = (word) => Math.log(1 + (corpus.length + 0.5) / ((df.get(word) ?? 0) + 0.5));
  const embed = (text) => {
    const vector = new Float64Array(dimensions);
    const counts = new Map();
    for (const word of words(text)) counts.set(word, (counts.get(word) ?? 0) + 1);
    for (const [word, tf] of counts) {
      const weight = (1 + Math.log(tf)) * idf(word);
      // Two slots a word, so that one collision does not make two words the same.
      for (const seed of [1, 2]) {
        const h = hash(word, seed);
        vector[h % dimensions] += h & 0x80000000 ? weight : -weight;
      }
    }
    const norm = Math.hypot(...vector) || 1;
    return Array.from(vector, (x) => x / norm);
  };
  return embed;
}

/** `corpus`: the texts whose word frequencies weight the words (a word none holds weighs the most). */
export function startLexicalEmbedder(corpus, dimensions = 384) {
  return startEmbeddingServer(lexicalModel(corpus, dimensions));
}
