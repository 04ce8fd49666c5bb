// The reference of `bench:languages`: a plain BM25 over documents held in memory, with the
// tokenization a search engine built for Chinese and Japanese without a dictionary uses (Lucene's
// StandardTokenizer + CJKBigramFilter): text NFKC-folded and lowercased; each run of Han, Hiragana
// and Katakana characters (and the prolonged sound mark ー) cut into overlapping pairs, a run of one
// character kept as it is; every other run of letters, marks and digits a word. No stemming, no stop
// words. Imports nothing of the project.

/** Lucene's defaults. */
export const K1 = 1.2;
export const B = 0.75;

const TOKENS =
  /(?<cjk>[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u30fc]+)|(?<word>[[\p{L}\p{M}\p{Nd}]--[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\u30fc]]+)/gv;

/** `text`'s terms, in order, repeated as often as they occur. */
export function tokens(text) {
  return terms(text, pairsOf);
}

/**
 * `text`'s terms with each Han and kana run cut into a dictionary's words instead (`Intl.Segmenter` of
 * `locale`, ICU's dictionaries), or (`both`) into its words and its pairs, the words marked apart: the
 * alternatives docs/search.md (Text without spaces) weighs.
 */
export function segmenterTokens(locale, { both = false } = {}) {
  const segmenter = new Intl.Segmenter(locale, { granularity: 'word' });
  const cut = (run) => {
    const words = [...segmenter.segment(run)]
      .filter(({ isWordLike }) => isWordLike)
      .map(({ segment }) => (both ? `word:${segment}` : segment));
    return both ? [...words, ...pairsOf(run)] : words;
  };
  return (text) => terms(text, cut);
}

/** `text` folded and lower-cased, its other words as they are and each Han and kana run `cut`. */
function terms(text, cut) {
  const out = [];
  for (const match of text.normalize('NFKC').toLowerCase().matchAll(TOKENS)) {
    const { cjk, word } = match.groups;
    if (word) out.push(word);
    else out.push(...cut(cjk));
  }
  return out;
}

/** A run's overlapping pairs of characters; a run of one character is itself. */
function pairsOf(run) {
  const characters = [...run];
  if (characters.length === 1) return characters;
  const out = [];
  for (let i = 0; i + 1 < characters.length; i++) out.push(characters[i] + characters[i + 1]);
  return out;
}

/**
 * A BM25 index of `documents` ({ id, text }): `search(query, k)` → the `k` best `{ id, score }`, every
 * document holding at least one of the query's terms (OR), each distinct query term counted once,
 * idf = ln(1 + (N − df + 0.5) / (df + 0.5)), document length in terms. Ties keep the documents' order.
 */
export function bm25Index(documents, { k1 = K1, b = B, tokenize = tokens } = {}) {
  const postings = new Map(); // term → [[document index, tf], ...]
  const lengths = [];
  for (const [index, document] of documents.entries()) {
    const counts = new Map();
    const terms = tokenize(document.text);
    for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
    for (const [term, tf] of counts) {
      if (!postings.has(term)) postings.set(term, []);
      postings.get(term).push([index, tf]);
    }
    lengths.push(terms.length);
  }
  const n = documents.length;
  const averageLength = lengths.reduce((sum, length) => sum + length, 0) / n;
  return {
    terms: postings.size,
    search(query, k = 10) {
      const scores = new Map();
      for (const term of new Set(tokenize(query))) {
        const list = postings.get(term);
        if (!list) continue;
        const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5));
        for (const [index, tf] of list) {
          const norm = tf + k1 * (1 - b + (b * lengths[index]) / averageLength);
          scores.set(index, (scores.get(index) ?? 0) + (idf * tf * (k1 + 1)) / norm);
        }
      }
      return [...scores]
        .sort((x, y) => y[1] - x[1] || x[0] - y[0])
        .slice(0, k)
        .map(([index, score]) => ({ id: documents[index].id, score }));
    },
  };
}
