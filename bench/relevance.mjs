// npm run bench:relevance — ingests BEIR SciFact through the HTTP API and reports, on its 809 train
// queries (qrels/train.tsv), nDCG@10, Recall@100 and MRR@10 for each search mode, and whether the
// score means what the contract's guide says:
// - off-topic queries (sentences of the fiction and code fixtures, which have nothing to do with
//   SciFact): the share whose best result scores below 0.5;
// - SciFact queries whose first result is judged relevant: the share where it scores at least 0.5;
// - pooled over every query's first 10 results, the ROC AUC of the score against relevance, beside
//   that of a score of the rank alone.
// It runs once per dense leg (BENCH_DENSE, comma-separated; all by default): `potion`, the real static
// model potion-base-2M through the local provider; `lexical`, controlled vectors that share words
// (bench/lexical-embedder.mjs); `random`, vectors that carry no information. Each run also fuses the
// legs' own rankings at fixed weights (bench/fusion-study.mjs). Then once with documents indexed whole
// (BEIR's setting), keyword only. Each run also sends the judged queries to the service's evaluation
// endpoint (POST /v1/datasets/{id}/evaluations, in pages of 100) and sets its figures beside the
// bench's own, with their largest difference, which should be 0.
import { appendFileSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { pino } from 'pino';
import { AppModule } from '../dist/app.module.js';
import { loadConfiguration } from '../dist/configuration.js';
import { SearchService } from '../dist/modules/search/search.service.js';
import { bestWeight, legLists, sweep } from './fusion-study.mjs';
import { startLexicalEmbedder } from './lexical-embedder.mjs';
import {
  apiKey,
  createDatabase,
  pool,
  poster,
  scifact,
  startEmbeddingServer,
  startServer,
  writeResult,
} from './lib.mjs';
import { exhaustiveStaticCosine } from './static-reference.mjs';

const FIXTURES = process.env.BENCH_FIXTURES ?? '../shared/fixtures';
const MODELS = resolve(process.env.BENCH_MODELS ?? '../shared/models');
const MODES = ['keyword', 'semantic', 'hybrid'];
const POTION = 'minishlab/potion-base-2M';
/** The controlled vectors' model, and where its cosines lie (measured: docs/search.md, "The score"). */
const LEXICAL = 'bench-lexical-1536';
const LEXICAL_CALIBRATION = [
  [0.15, 0],
  [0.28, 0.5],
  [0.45, 0.9],
  [1, 1],
];
const RANDOM = 'bench-random-256';

const { corpus, queries, qrels } = scifact();
const offTopic = offTopicQueries();
const texts = corpus.map((doc) => `${doc.title}\n\n${doc.text}`);

// As many dimensions as OpenAI's text-embedding-3-small: fewer make the hashed words collide, and
// unrelated texts drift towards each other.
const lexical = await startLexicalEmbedder(
  corpus.map((doc) => `${doc.title} ${doc.text}`),
  1536,
);
const noise = await startEmbeddingServer(randomVector);
const DENSE = {
  potion: { EMBEDDING_PROVIDER: 'local', EMBEDDING_MODEL: POTION, MODELS_DIR: MODELS },
  lexical: {
    EMBEDDING_PROVIDER: 'openai',
    OPENAI_API_KEY: 'bench',
    OPENAI_BASE_URL: lexical.baseUrl,
    EMBEDDING_MODEL: LEXICAL,
    SEMANTIC_CALIBRATION: JSON.stringify({ [LEXICAL]: LEXICAL_CALIBRATION }),
  },
  random: {
    EMBEDDING_PROVIDER: 'openai',
    OPENAI_API_KEY: 'bench',
    OPENAI_BASE_URL: noise.baseUrl,
    EMBEDDING_MODEL: RANDOM,
  },
};
const dense = (process.env.BENCH_DENSE ?? Object.keys(DENSE).join(',')).split(',');
const result = {
  dataset: 'BEIR SciFact',
  split: 'train',
  queries: qrels.size,
  off_topic_queries: offTopic.length,
  documents: corpus.length,
  runs: {},
};
try {
  if (dense.includes('potion')) {
    const started = performance.now();
    result.potion_exhaustive_cosine = await exhaustiveStaticCosine(
      join(MODELS, POTION),
      texts,
      corpus,
      queries,
      qrels,
    );
    console.log(
      `potion-base-2M, exhaustive cosine outside the service: ${JSON.stringify(result.potion_exhaustive_cosine)} (${Math.round(performance.now() - started)} ms)`,
    );
  }
  for (const name of dense) result.runs[name] = await run(DENSE[name], MODES);
  // The comparison the chunking defaults are held to is the keyword leg's: vectors would only slow it.
  result.runs.whole_documents = await run({ EMBEDDING_PROVIDER: 'none', CHUNK_TOKENS: '2048' }, ['keyword']);
} finally {
  await lexical.close();
  await noise.close();
}
result.measured_at = new Date().toISOString();

for (const [name, runResult] of Object.entries(result.runs)) {
  console.log(`\n${name}: SciFact train (${result.queries} queries), ${runResult.chunks} chunks`);
  for (const [mode, m] of Object.entries(runResult.modes)) {
    console.log(
      `  ${mode.padEnd(8)} nDCG@10 ${m.ndcg_at_10}  Recall@100 ${m.recall_at_100}  MRR@10 ${m.mrr_at_10}  p50 ${m.p50_ms} ms`,
    );
    console.log(
      `  ${''.padEnd(8)} off-topic best < 0.5: ${m.off_topic_best_below_half}  relevant first >= 0.5: ` +
        `${m.relevant_first_at_least_half} (of ${m.relevant_first_queries})  AUC score ${m.auc_score} / rank ${m.auc_rank}`,
    );
    console.log(`  ${''.padEnd(8)} AUC of the legs' relevance alone ${m.auc_relevance_alone}`);
    for (const [name, q] of Object.entries(m.evidence)) {
      console.log(
        `  ${''.padEnd(8)} ${name}: off-topic best p90 ${q.off_topic_p90}, relevant first p20 ${q.relevant_first_p20}`,
      );
    }
  }
  const { endpoint } = runResult;
  console.log(
    `  evaluation endpoint (${endpoint.pages} pages, ${endpoint.ms} ms): largest difference from the bench's ` +
      `figures ${endpoint.max_abs_difference}, per query ${endpoint.max_abs_difference_per_query}`,
  );
  if (endpoint.semantic_unavailable)
    console.log(`    semantic unavailable: ${endpoint.semantic_unavailable}`);
  for (const row of endpoint.modes) {
    const label = row.weights ? `hybrid ${row.weights_source} ${row.weights.semantic}` : row.mode;
    console.log(
      `    ${label.padEnd(20)} nDCG@10 ${row.ndcg_at_10}  Recall@100 ${row.recall_at_100}  MRR@10 ${row.mrr_at_10}`,
    );
  }
  if (runResult.fusion) {
    const { weights, pseudo_queries, evidence, seconds_after_ingestion } = runResult.fusion;
    console.log(
      `  chosen weights ${JSON.stringify(weights)} on ${pseudo_queries} pseudo-queries, ${seconds_after_ingestion} s ` +
        `after ingestion; pseudo-query nDCG@10 ${JSON.stringify(evidence.hybrid_ndcg_at_10)}`,
    );
  }
  if (runResult.study) {
    const { chosen_ndcg_at_10, best_fixed, fixed_ndcg_at_10, offline } = runResult.study;
    console.log(
      `  hybrid nDCG@10 (pages of 10): chosen ${chosen_ndcg_at_10}, best fixed ${JSON.stringify(best_fixed)}`,
    );
    console.log(`    by semantic weight: ${Object.values(fixed_ndcg_at_10).join(' ')}`);
    for (const [fusion, row] of Object.entries(offline)) {
      console.log(`    offline ${fusion.padEnd(17)} ${Object.values(row).join(' ')}`);
    }
  }
}
console.log(`written to ${writeResult('relevance', result)}`);

/** A unit vector drawn from the text's hash: the same text always gets the same, and no two relate. */
function randomVector(text) {
  let seed = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) seed = Math.imul(seed ^ text.charCodeAt(i), 0x01000193);
  const vector = Array.from({ length: 256 }, () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  });
  const norm = Math.hypot(...vector);
  return vector.map((x) => x / norm);
}

/** Ingests SciFact with `settings` (environment), then measures `modes` in process. */
async function run(settings, modes) {
  const database = await createDatabase();
  const env = { DATABASE_URL: database.url, REDIS_PREFIX: `bench_rel_${process.pid}`, ...settings };
  const server = await startServer({
    ...env,
    INGEST_CONCURRENCY: '8',
    RATE_LIMIT_API_KEY: '10000000',
    FUSION_TUNING_INTERVAL_SECONDS: '1',
  });
  const key = apiKey(database.url);
  const headers = { Authorization: `Bearer ${key.api_key}`, 'Content-Type': 'application/json' };
  const post = poster(server.url, headers);
  try {
    const dataset = await post('/v1/datasets', { name: 'scifact' });
    console.log(`ingesting ${corpus.length} documents (${JSON.stringify(settings)}) ...`);
    const ingestStarted = performance.now();
    await pool(corpus, 8, (doc) =>
      post(`/v1/datasets/${dataset.id}/documents`, {
        content: `${doc.title}\n\n${doc.text}`,
        metadata: { source_id: doc._id, title: doc.title },
      }),
    );
    for (;;) {
      const page = await (
        await fetch(`${server.url}/v1/datasets/${dataset.id}/documents?status=processing&limit=1`, {
          headers,
        })
      ).json();
      if (page.total === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const ingestSeconds = Math.round((performance.now() - ingestStarted) / 100) / 10;
    // The weights the service chooses for the dataset once it is quiet (FUSION_TUNING_INTERVAL_SECONDS=1).
    const fusion =
      settings.EMBEDDING_PROVIDER === 'none'
        ? undefined
        : await chosenFusion(server.url, dataset.id, headers);
    // The same judged queries through the service's evaluation endpoint, on the index as it stands.
    const evaluated = await evaluation(post, dataset.id);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const chunks = Number((await client.query('SELECT chunk_count FROM dataset_index')).rows[0].chunk_count);
    await client.end();
    await server.stop();

    // In process, so that Recall@100 can look past the API's 50-result page.
    const app = await NestFactory.createApplicationContext(
      AppModule.forRoot(
        loadConfiguration({ ...process.env, ...env, ROLE: 'api', LOG_LEVEL: 'silent' }),
        pino({ level: 'silent' }),
      ),
      { logger: false },
    );
    const search = app.get(SearchService);
    const caller = {
      tier: 'api_key',
      accountId: key.account_id,
      credentialId: key.key_id,
      scopes: ['search'],
      datasetIds: null,
    };
    const ask = async (query, mode, limit, weights) => {
      const options = { limit, mode, rerank: false, explain: true, weights };
      return search.search(await search.prepare(caller, dataset.id, options, [query]), query, options);
    };
    ask.run = JSON.stringify(settings.EMBEDDING_MODEL ?? 'none');
    const measured = {};
    const perQuery = {};
    for (const mode of modes) measured[mode] = await measure(ask, mode, perQuery);
    const study = modes.includes('hybrid') ? await fusionStudy(ask) : undefined;
    await app.close();
    return {
      settings: { ...settings, OPENAI_BASE_URL: undefined },
      chunks,
      ingest_seconds: ingestSeconds,
      fusion,
      modes: measured,
      endpoint: compared(evaluated, measured, perQuery),
      study,
    };
  } finally {
    await server.stop().catch(() => undefined);
    await database.drop();
  }
}

/** The dataset's fusion as the service chose it, and how long after the last document it was chosen. */
async function chosenFusion(url, datasetId, headers) {
  const quiet = performance.now();
  for (;;) {
    const dataset = await (await fetch(`${url}/v1/datasets/${datasetId}`, { headers })).json();
    if (dataset.fusion.source === 'dataset') {
      return {
        ...dataset.fusion,
        seconds_after_ingestion: Math.round((performance.now() - quiet) / 100) / 10,
      };
    }
    if (performance.now() - quiet > 600_000) throw new Error('no fusion weights chosen within 10 minutes');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * The evaluation endpoint's figures for the train queries (each relevant document named by its
 * `source_id`, with its qrels grade), sent in pages of 100 with `per_query`: each row's per-query
 * figures in the qrels' order, and their means over all queries, rounded as the bench rounds.
 */
async function evaluation(post, datasetId) {
  const judged = [...qrels].map(([queryId, relevant]) => ({
    query: queries.get(queryId),
    relevant: [...relevant].map(([sourceId, grade]) => ({ metadata: { source_id: sourceId }, grade })),
  }));
  const started = performance.now();
  const pages = [];
  for (let i = 0; i < judged.length; i += 100) {
    pages.push(
      await post(`/v1/datasets/${datasetId}/evaluations`, {
        queries: judged.slice(i, i + 100),
        per_query: true,
      }),
    );
  }
  const name = ({ mode, weights, weights_source }) =>
    weights ? `${mode} ${weights_source} ${weights.keyword}/${weights.semantic}` : mode;
  const rows = pages[0].modes.map(name);
  for (const page of pages) {
    if (JSON.stringify(page.modes.map(name)) !== JSON.stringify(rows))
      throw new Error('pages judged other rows');
  }
  const perQuery = pages.flatMap((page) => page.per_query);
  return {
    pages: pages.length,
    ms: Math.round(performance.now() - started),
    semantic_unavailable: pages[0].semantic_unavailable,
    rows: pages[0].modes.map((row, j) => {
      const figures = perQuery.map((query) => query.modes[j]);
      const { mode, weights, weights_source } = row;
      return {
        mode,
        weights,
        weights_source,
        ndcg_at_10: round(mean(figures.map((f) => f.ndcg_at_10))),
        recall_at_100: round(mean(figures.map((f) => f.recall_at_100))),
        mrr_at_10: round(mean(figures.map((f) => f.mrr_at_10))),
        per_query: figures,
      };
    }),
  };
}

/**
 * The endpoint's figures beside the bench's own: the row of each mode the bench measures (hybrid at
 * the weights its searches use, as the bench's hybrid is), and the largest absolute difference of the
 * means and of the per-query figures.
 */
function compared(evaluated, measured, perQuery) {
  const METRICS = { ndcg_at_10: 'ndcg10', recall_at_100: 'recall100', mrr_at_10: 'mrr10' };
  let largest = 0;
  let largestPerQuery = 0;
  for (const mode of Object.keys(measured)) {
    const row = evaluated.rows.find(
      (r) => r.mode === mode && (mode !== 'hybrid' || ['dataset', 'default'].includes(r.weights_source)),
    );
    if (!row) throw new Error(`the endpoint gave no ${mode} row`);
    for (const [metric, own] of Object.entries(METRICS)) {
      largest = Math.max(largest, Math.abs(row[metric] - measured[mode][metric]));
      perQuery[mode][own].forEach((x, i) => {
        largestPerQuery = Math.max(largestPerQuery, Math.abs(x - row.per_query[i][metric]));
      });
    }
  }
  return {
    pages: evaluated.pages,
    ms: evaluated.ms,
    semantic_unavailable: evaluated.semantic_unavailable,
    modes: evaluated.rows.map(({ per_query: _, ...row }) => row),
    max_abs_difference: largest,
    max_abs_difference_per_query: largestPerQuery,
  };
}

/**
 * Hybrid nDCG@10 (pages of 10, as a client asks) at the dataset's chosen weights and at each fixed
 * semantic weight, through the service; and, from the legs' own rankings, the fusions the service
 * does not use, for reference (bench/fusion-study.mjs).
 */
async function fusionStudy(ask) {
  const at = async (weights) => {
    let total = 0;
    for (const [queryId, relevant] of qrels) {
      const ranking = [
        ...new Set(
          (await ask(queries.get(queryId), 'hybrid', 10, weights)).map((hit) => hit.metadata.source_id),
        ),
      ];
      total += ndcg(ranking, relevant);
    }
    return round(total / qrels.size);
  };
  const fixed = {};
  for (let i = 0; i <= 10; i++)
    fixed[(i / 10).toFixed(1)] = await at({ keyword: 1 - i / 10, semantic: i / 10 });
  const [bestWeightFixed, bestFixed] = bestWeight(fixed);
  const judged = [];
  for (const [queryId, relevant] of qrels) judged.push([await legLists(ask, queries.get(queryId)), relevant]);
  if (process.env.BENCH_RELEVANCE_LISTS) {
    const lists = judged.map(([legs, relevant]) => ({ legs, relevant: Object.fromEntries(relevant) }));
    appendFileSync(process.env.BENCH_RELEVANCE_LISTS, `${JSON.stringify({ run: ask.run, lists })}\n`);
  }
  return {
    chosen_ndcg_at_10: await at(undefined),
    fixed_ndcg_at_10: fixed,
    best_fixed: { semantic_weight: bestWeightFixed, ndcg_at_10: bestFixed },
    offline: sweep(judged, (ranking, relevant) => ndcg(ranking.slice(0, 10), relevant)),
  };
}

/** `perQuery[mode]` gets each query's figures, which the endpoint's are compared with. */
async function measure(ask, mode, perQuery) {
  const metrics = { ndcg10: [], recall100: [], mrr10: [] };
  perQuery[mode] = metrics;
  const latencies = [];
  const pooled = []; // [score, rank, relevant, relevance alone] of every query's first 10 results
  let relevantFirst = 0;
  let relevantFirstStrong = 0;
  // The evidence of relevant first results and of off-topic best results: the keyword share of the
  // ceiling alone and times √terms, and the cosine (docs/search.md, Fusion and the score).
  const evidence = {
    relevant_first: { share: [], e: [], cosine: [] },
    off_topic_best: { share: [], e: [], cosine: [] },
  };
  const note = (kind, hit) => {
    if (hit?.semantic_score !== undefined) evidence[kind].cosine.push(hit.semantic_score);
    if (!hit?.keyword_ceiling) return;
    const share = hit.keyword_score / hit.keyword_ceiling;
    evidence[kind].share.push(share);
    evidence[kind].e.push(share * Math.sqrt(hit.keyword_terms));
  };
  const separation = (name) => ({
    off_topic_p90: quantile(evidence.off_topic_best[name], 0.9),
    relevant_first_p20: quantile(evidence.relevant_first[name], 0.2),
  });
  for (const [queryId, relevant] of qrels) {
    const query = queries.get(queryId);
    const started = performance.now();
    const hits = await ask(query, mode, 300);
    latencies.push(performance.now() - started);
    const ranking = [...new Set(hits.map((hit) => hit.metadata.source_id))];
    metrics.ndcg10.push(ndcg(ranking.slice(0, 10), relevant));
    metrics.recall100.push(ranking.slice(0, 100).filter((id) => relevant.has(id)).length / relevant.size);
    const first = ranking.slice(0, 10).findIndex((id) => relevant.has(id));
    metrics.mrr10.push(first === -1 ? 0 : 1 / (first + 1));

    // Scores as a client sees them, at a page of 10.
    const page = await ask(query, mode, 10);
    page.forEach((hit, i) =>
      pooled.push([
        hit.score,
        i + 1,
        relevant.has(hit.metadata.source_id),
        Math.max(hit.keyword_relevance ?? 0, hit.semantic_relevance ?? 0),
      ]),
    );
    sample(mode, 'scifact', page, (hit) => relevant.has(hit.metadata.source_id));
    if (page.length > 0 && relevant.has(page[0].metadata.source_id)) {
      relevantFirst++;
      note('relevant_first', page[0]);
      if (page[0].score >= 0.5) relevantFirstStrong++;
    }
  }
  let offTopicWeak = 0;
  for (const query of offTopic) {
    const page = await ask(query, mode, 10);
    if ((page[0]?.score ?? 0) < 0.5) offTopicWeak++;
    note('off_topic_best', page[0]);
    sample(mode, 'off_topic', page, () => false);
  }
  return {
    ndcg_at_10: round(mean(metrics.ndcg10)),
    recall_at_100: round(mean(metrics.recall100)),
    mrr_at_10: round(mean(metrics.mrr10)),
    p50_ms: Math.round(latencies.sort((a, b) => a - b)[Math.floor(latencies.length / 2)] * 10) / 10,
    off_topic_best_below_half: round(offTopicWeak / offTopic.length),
    relevant_first_queries: relevantFirst,
    relevant_first_at_least_half: round(relevantFirstStrong / relevantFirst),
    auc_score: round(auc(pooled.map(([score, , relevant]) => [score, relevant]))),
    auc_rank: round(auc(pooled.map(([, rank, relevant]) => [-rank, relevant]))),
    // The legs' relevance without the ratio to the query's best (docs/search.md).
    auc_relevance_alone: round(auc(pooled.map(([, , relevant, alone]) => [alone, relevant]))),
    evidence: {
      ...(mode !== 'semantic' && {
        keyword_share: separation('share'),
        keyword_share_times_sqrt_terms: separation('e'),
      }),
      ...(mode === 'semantic' && { cosine: separation('cosine') }),
    },
  };
}

/**
 * With BENCH_RELEVANCE_SAMPLES=file, each result's evidence is written there, one JSON line a result:
 * what calibration points are chosen from.
 */
function sample(mode, kind, page, isRelevant) {
  if (!process.env.BENCH_RELEVANCE_SAMPLES) return;
  const rows = page.map((hit, i) =>
    JSON.stringify({
      mode,
      kind,
      rank: i + 1,
      relevant: isRelevant(hit),
      score: hit.score,
      keyword_share: hit.keyword_ceiling ? hit.keyword_score / hit.keyword_ceiling : null,
      cosine: hit.semantic_score ?? null,
      keyword_terms: hit.keyword_terms ?? null,
      keyword_relevance: hit.keyword_relevance ?? null,
      semantic_relevance: hit.semantic_relevance ?? null,
      keyword_rank: hit.keyword_rank ?? null,
      semantic_rank: hit.semantic_rank ?? null,
    }),
  );
  appendFileSync(process.env.BENCH_RELEVANCE_SAMPLES, rows.map((row) => `${row}\n`).join(''));
}

/** Sentences of the fiction and lines of the code fixtures: queries SciFact has no answer to. */
function offTopicQueries() {
  const prose = ['txt/book-war-and-peace-1p.txt', 'md/example-docs-README.md', 'txt/fake-text.txt']
    .map((path) => readFileSync(`${FIXTURES}/${path}`, 'utf8'))
    .join('\n');
  const sentences = prose
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?])\s+/)
    .filter((sentence) => (sentence.match(/[A-Za-z]+/g) ?? []).length >= 4);
  const code = ['code/pytesseract.py', 'code/BubbleSort.java', 'code/BubbleSort.js']
    .flatMap((path) => readFileSync(`${FIXTURES}/${path}`, 'utf8').split('\n'))
    .map((line) => line.trim())
    .filter((line) => (line.match(/[A-Za-z]{2,}/g) ?? []).length >= 3);
  return [...new Set([...sentences, ...code])].map((query) => query.slice(0, 1000));
}

/** The probability that a relevant result scores above an irrelevant one (ties count half). */
function auc(pairs) {
  const sorted = pairs.toSorted((a, b) => a[0] - b[0]);
  let positives = 0;
  let rankSum = 0;
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j < sorted.length && sorted[j][0] === sorted[i][0]) j++;
    const midRank = (i + 1 + j) / 2;
    for (let k = i; k < j; k++) if (sorted[k][1]) (positives++, (rankSum += midRank));
    i = j;
  }
  const negatives = sorted.length - positives;
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
}

function ndcg(ranking, relevant) {
  const dcg = ranking.reduce((sum, id, i) => sum + (relevant.get(id) ?? 0) / Math.log2(i + 2), 0);
  const ideal = [...relevant.values()]
    .sort((a, b) => b - a)
    .slice(0, 10)
    .reduce((sum, rel, i) => sum + rel / Math.log2(i + 2), 0);
  return ideal === 0 ? 0 : dcg / ideal;
}

function quantile(xs, p) {
  const sorted = xs.toSorted((a, b) => a - b);
  return round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]);
}

function mean(xs) {
  return xs.reduce((sum, x) => sum + x, 0) / xs.length;
}

function round(x) {
  return Math.round(x * 10000) / 10000;
}
