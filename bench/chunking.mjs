// npm run bench:chunking — keyword nDCG@10 on SciFact's train queries for chunk sizes, context and BM25's
// b, in a few minutes rather than an ingestion per setting: documents are cut by the service's own
// chunker (the estimate the keyword-only and remote-model services use), each chunk's lexemes come from
// PostgreSQL's `english` configuration as the service indexes them, and BM25 is computed here over
// them, as the service does (`npm run bench:relevance` gives the same nDCG@10 to four decimals for the
// settings both run). Documents are ranked by their best chunk, as bench:relevance ranks them.
import pg from 'pg';
import { chunkByEstimate } from '../dist/modules/embeddings/chunking/chunker.js';
import { ADMIN_URL, scifact, writeResult } from './lib.mjs';

const K1 = 1.2;
/**
 * [chunk tokens, times the title is indexed with each chunk, b, β]: 2,048 tokens hold a whole
 * abstract; β adds to each chunk's BM25 that share of its document's best other chunk's.
 */
const SETTINGS = [
  [256, 0, 0.75],
  [256, 1, 0.75],
  [256, 2, 0.75],
  [256, 1, 0.75, 0.2],
  [256, 1, 0.75, 0.4],
  [384, 1, 0.75],
  [512, 0, 0.75],
  [512, 1, 0.75],
  [512, 2, 0.75],
  [512, 2, 0.6],
  [2048, 0, 0.75],
  [2048, 2, 0.75],
  [2048, 2, 0.6],
];

const { corpus, queries: queryText, qrels } = scifact();

const cache = new Map();
const client = new pg.Client({ connectionString: ADMIN_URL });
await client.connect();
const queries = await lexemes([...qrels.keys()].map((id) => queryText.get(id)));
const result = { dataset: 'BEIR SciFact', split: 'train', queries: qrels.size, k1: K1, settings: [] };
try {
  for (const [tokens, titleWeight, b, beta = 0] of SETTINGS) {
    const chunks = await chunked(tokens, titleWeight);
    const ndcg10 = evaluate(chunks, b, beta);
    result.settings.push({
      chunk_tokens: tokens,
      title_weight: titleWeight,
      b,
      other_chunks_share: beta,
      chunks: chunks.length,
      ndcg_at_10: ndcg10,
    });
    console.log(
      `chunks of ${String(tokens).padStart(4)} tokens, title x${titleWeight}, b ${b}, β ${beta}: ` +
        `${chunks.length} chunks, nDCG@10 ${ndcg10}`,
    );
  }
} finally {
  await client.end();
}
result.measured_at = new Date().toISOString();
console.log(`written to ${writeResult('chunking', result)}`);

/** Each chunk's document and lexeme counts, the title `titleWeight` times before its content. */
async function chunked(tokens, titleWeight) {
  const key = `${tokens}/${titleWeight}`;
  if (cache.has(key)) return cache.get(key);
  const pieces = [];
  for (const doc of corpus) {
    const text = `${doc.title}\n\n${doc.text}`;
    for (const chunk of await chunkByEstimate(
      { format: 'prose', sections: [{ text }] },
      { maxTokens: tokens, overlapTokens: 32 },
    )) {
      pieces.push({ doc: doc._id, source: `${`${doc.title}\n`.repeat(titleWeight)}\n${chunk.content}` });
    }
  }
  const tfs = await lexemes(pieces.map((piece) => piece.source));
  const chunks = pieces.map((piece, i) => ({ doc: piece.doc, tf: tfs[i] }));
  cache.set(key, chunks);
  return chunks;
}

/** Each text's lexemes with their counts, from PostgreSQL's `english` configuration. */
async function lexemes(texts) {
  const out = [];
  for (let i = 0; i < texts.length; i += 1000) {
    const { rows } = await client.query(
      `SELECT coalesce((SELECT json_object_agg(l.lexeme, coalesce(array_length(l.positions, 1), 1))
                          FROM unnest(to_tsvector('english', t)) l), '{}') AS tf
         FROM unnest($1::text[]) WITH ORDINALITY AS x(t, ord) ORDER BY ord`,
      [texts.slice(i, i + 1000)],
    );
    out.push(...rows.map((row) => row.tf));
  }
  return out;
}

/** Mean nDCG@10 over the train queries, documents ranked by their best chunk's score. */
function evaluate(chunks, b, beta) {
  const postings = new Map();
  let total = 0;
  const lengths = chunks.map(({ tf }, i) => {
    let length = 0;
    for (const [term, count] of Object.entries(tf)) {
      length += count;
      if (!postings.has(term)) postings.set(term, []);
      postings.get(term).push([i, count]);
    }
    total += length;
    return length;
  });
  const n = chunks.length;
  const average = total / n;
  let sum = 0;
  [...qrels.values()].forEach((relevant, q) => {
    const scores = new Map();
    for (const term of Object.keys(queries[q])) {
      const list = postings.get(term) ?? [];
      const idf = Math.log(1 + (n - list.length + 0.5) / (list.length + 0.5));
      for (const [i, tf] of list) {
        const part = (idf * tf * (K1 + 1)) / (tf + K1 * (1 - b + (b * lengths[i]) / average));
        scores.set(i, (scores.get(i) ?? 0) + part);
      }
    }
    let ranked = [...scores];
    if (beta > 0) {
      // Each document's two best chunk scores: a chunk gains β of the best that is not its own.
      const best = new Map();
      for (const [i, score] of ranked) {
        const [first, second] = best.get(chunks[i].doc) ?? [0, 0];
        best.set(chunks[i].doc, score > first ? [score, first] : [first, Math.max(second, score)]);
      }
      ranked = ranked.map(([i, score]) => {
        const [first, second] = best.get(chunks[i].doc);
        return [i, score + beta * (score === first ? second : first)];
      });
    }
    ranked.sort((x, y) => y[1] - x[1] || x[0] - y[0]);
    const documents = [];
    for (const [i] of ranked) {
      if (!documents.includes(chunks[i].doc)) documents.push(chunks[i].doc);
      if (documents.length === 10) break;
    }
    const dcg = documents.reduce((s, id, rank) => s + (relevant.has(id) ? 1 : 0) / Math.log2(rank + 2), 0);
    let ideal = 0;
    for (let rank = 0; rank < Math.min(10, relevant.size); rank++) ideal += 1 / Math.log2(rank + 2);
    sum += dcg / ideal;
  });
  return Math.round((sum / qrels.size) * 10000) / 10000;
}
