// npm run bench:relevance — ingests BEIR SciFact through the HTTP API and reports nDCG@10, Recall@100
// and MRR@10 on the 809 train queries (qrels/train.tsv) for each search mode the configured models
// allow. Without real embedding weights on this machine only the keyword leg can be judged: with the
// default EMBEDDING_PROVIDER=none this bench runs `keyword`; point it at a real model to add the others.
import { readFileSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import { pino } from 'pino';
import { AppModule } from '../dist/app.module.js';
import { loadConfig } from '../dist/config/app-config.js';
import { SearchService } from '../dist/modules/search/search.service.js';
import { apiKey, createDatabase, pool, poster, startServer, writeResult } from './lib.mjs';

const DATA = process.env.BENCH_SCIFACT ?? '../shared/datasets/scifact';
const embeddingEnv = {
  EMBEDDING_PROVIDER: process.env.EMBEDDING_PROVIDER ?? 'none',
  ...(process.env.EMBEDDING_MODEL ? { EMBEDDING_MODEL: process.env.EMBEDDING_MODEL } : {}),
  ...(process.env.OPENAI_API_KEY ? { OPENAI_API_KEY: process.env.OPENAI_API_KEY } : {}),
  ...(process.env.OPENAI_BASE_URL ? { OPENAI_BASE_URL: process.env.OPENAI_BASE_URL } : {}),
};
// BEIR's setting indexes each document (title + abstract) whole: chunks large enough to hold one.
const CHUNK_TOKENS = process.env.CHUNK_TOKENS ?? '2048';

const corpus = readFileSync(`${DATA}/corpus.jsonl`, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l));
const queries = new Map(
  readFileSync(`${DATA}/queries.jsonl`, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .map((q) => [q._id, q.text]),
);
const qrels = new Map();
for (const line of readFileSync(`${DATA}/qrels/train.tsv`, 'utf8').split('\n').slice(1).filter(Boolean)) {
  const [queryId, docId, score] = line.split('\t');
  if (!qrels.has(queryId)) qrels.set(queryId, new Map());
  qrels.get(queryId).set(docId, Number(score));
}

const database = await createDatabase();
const env = {
  DATABASE_URL: database.url,
  REDIS_PREFIX: `bench_rel_${process.pid}`,
  CHUNK_TOKENS,
  ...embeddingEnv,
};
const server = await startServer({ ...env, INGEST_CONCURRENCY: '8', RATE_LIMIT_API_KEY: '10000000' });
const key = apiKey(database.url);
const headers = { Authorization: `Bearer ${key.api_key}`, 'Content-Type': 'application/json' };
const post = poster(server.url, headers);

const result = {
  dataset: 'BEIR SciFact',
  split: 'train',
  queries: qrels.size,
  documents: corpus.length,
  chunk_tokens: Number(CHUNK_TOKENS),
  embedding: embeddingEnv.EMBEDDING_PROVIDER,
  modes: {},
};
try {
  const dataset = await post('/v1/datasets', { name: 'scifact' });
  console.log(`ingesting ${corpus.length} documents ...`);
  await pool(corpus, 8, (doc) =>
    post(`/v1/datasets/${dataset.id}/documents`, {
      content: `${doc.title}\n\n${doc.text}`,
      metadata: { source_id: doc._id },
    }),
  );
  for (;;) {
    const page = await (
      await fetch(`${server.url}/v1/datasets/${dataset.id}/documents?status=processing&limit=1`, { headers })
    ).json();
    if (page.total === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  await server.stop();

  // In process, so that Recall@100 can look past the API's 50-result page.
  const app = await NestFactory.createApplicationContext(
    AppModule.forRoot(
      loadConfig({ ...process.env, ...env, ROLE: 'api', LOG_LEVEL: 'silent' }),
      pino({ level: 'silent' }),
    ),
    { logger: false },
  );
  const search = app.get(SearchService);
  const caller = { tier: 'api_key', accountId: key.account_id, credentialId: key.key_id, scopes: ['search'] };
  const modes = embeddingEnv.EMBEDDING_PROVIDER === 'none' ? ['keyword'] : ['keyword', 'semantic', 'hybrid'];
  for (const mode of modes) {
    const metrics = { ndcg10: [], recall100: [], mrr10: [] };
    const latencies = [];
    for (const [queryId, relevant] of qrels) {
      const started = performance.now();
      const query = queries.get(queryId);
      const options = { limit: 300, mode, rerank: false, explain: false };
      const prepared = await search.prepare(caller, dataset.id, options, [query]);
      const hits = await search.search(prepared, query, options);
      latencies.push(performance.now() - started);
      const ranking = [...new Set(hits.map((hit) => hit.metadata.source_id))];
      metrics.ndcg10.push(ndcg(ranking.slice(0, 10), relevant));
      metrics.recall100.push(ranking.slice(0, 100).filter((id) => relevant.has(id)).length / relevant.size);
      const first = ranking.slice(0, 10).findIndex((id) => relevant.has(id));
      metrics.mrr10.push(first === -1 ? 0 : 1 / (first + 1));
    }
    const mean = (xs) => Math.round((xs.reduce((s, x) => s + x, 0) / xs.length) * 10000) / 10000;
    latencies.sort((a, b) => a - b);
    result.modes[mode] = {
      ndcg_at_10: mean(metrics.ndcg10),
      recall_at_100: mean(metrics.recall100),
      mrr_at_10: mean(metrics.mrr10),
      p50_ms: Math.round(latencies[Math.floor(latencies.length / 2)] * 10) / 10,
    };
  }
  await app.close();
} finally {
  await server.stop().catch(() => undefined);
  await database.drop();
}
result.references = { bm25_beir_paper: 0.665, bm25_pyserini_flat: 0.679, target_keyword_ndcg_at_10: 0.68 };
result.measured_at = new Date().toISOString();

console.log(`\nSciFact train (${result.queries} queries), chunks of up to ${CHUNK_TOKENS} tokens`);
for (const [mode, m] of Object.entries(result.modes)) {
  console.log(
    `${mode.padEnd(9)} nDCG@10 ${m.ndcg_at_10}   Recall@100 ${m.recall_at_100}   MRR@10 ${m.mrr_at_10}   p50 ${m.p50_ms} ms`,
  );
}
console.log(
  `references: BM25 0.665 (BEIR paper), 0.679 (Pyserini flat); target for keyword >= 0.68\nwritten to ${writeResult('relevance', result)}`,
);

function ndcg(ranking, relevant) {
  const dcg = ranking.reduce((sum, id, i) => sum + (relevant.get(id) ?? 0) / Math.log2(i + 2), 0);
  const ideal = [...relevant.values()]
    .sort((a, b) => b - a)
    .slice(0, 10)
    .reduce((sum, rel, i) => sum + rel / Math.log2(i + 2), 0);
  return ideal === 0 ? 0 : dcg / ideal;
}
