// A Model2Vec encoder of the bench's own, apart from the service's (src/modules/embeddings/static-model.ts),
// after the reference implementation: tokenize without special tokens, drop the unknown token, keep
// 512 ids, mean of the rows, L2-normalise. Searched exhaustively by cosine, it gives the figure the
// service's semantic leg must reach with the same model.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';

function encoder(dir) {
  const file = readFileSync(join(dir, 'model.safetensors'));
  const headerLength = Number(file.readBigUInt64LE(0));
  const { embeddings } = JSON.parse(file.subarray(8, 8 + headerLength).toString('utf8'));
  if (embeddings.dtype !== 'F32') throw new Error(`the reference reads F32 tables, not ${embeddings.dtype}`);
  const [rows, dims] = embeddings.shape;
  const start = 8 + headerLength + embeddings.data_offsets[0];
  const table = new Float32Array(
    file.buffer.slice(file.byteOffset + start, file.byteOffset + start + rows * dims * 4),
  );
  const json = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8'));
  const tokenizer = new Tokenizer(json, {});
  const unk = json.model.unk_token === undefined ? -1 : json.model.vocab[json.model.unk_token];
  return (text) => {
    const ids = tokenizer
      .encode(text, { add_special_tokens: false })
      .ids.filter((id) => id !== unk)
      .slice(0, 512);
    const v = new Float64Array(dims);
    for (const id of ids) for (let d = 0; d < dims; d++) v[d] += table[id * dims + d];
    const norm = Math.hypot(...v) || 1;
    return Float32Array.from(v, (x) => x / norm);
  };
}

/** nDCG@10, Recall@100 and MRR@10 of exhaustive cosine over `texts` (one per document of `corpus`). */
export async function exhaustiveStaticCosine(dir, texts, corpus, queries, qrels) {
  const encode = encoder(dir);
  const vectors = texts.map(encode);
  const totals = { ndcg_at_10: 0, recall_at_100: 0, mrr_at_10: 0 };
  for (const [queryId, relevant] of qrels) {
    const q = encode(queries.get(queryId));
    const scored = vectors.map((v, i) => {
      let dot = 0;
      for (let d = 0; d < v.length; d++) dot += v[d] * q[d];
      return [dot, corpus[i]._id];
    });
    const ranking = scored.sort((a, b) => b[0] - a[0]).map(([, id]) => id);
    const gain = ranking
      .slice(0, 10)
      .reduce((sum, id, i) => sum + (relevant.get(id) ?? 0) / Math.log2(i + 2), 0);
    const ideal = [...relevant.values()]
      .sort((a, b) => b - a)
      .slice(0, 10)
      .reduce((sum, rel, i) => sum + rel / Math.log2(i + 2), 0);
    totals.ndcg_at_10 += gain / ideal;
    totals.recall_at_100 += ranking.slice(0, 100).filter((id) => relevant.has(id)).length / relevant.size;
    const first = ranking.slice(0, 10).findIndex((id) => relevant.has(id));
    totals.mrr_at_10 += first === -1 ? 0 : 1 / (first + 1);
  }
  return Object.fromEntries(
    Object.entries(totals).map(([name, total]) => [name, Math.round((total / qrels.size) * 10000) / 10000]),
  );
}
