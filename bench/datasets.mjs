// npm run bench:datasets — a search over several datasets (`dataset_ids`), over HTTP, two ways:
//
// 1. Recall: SciFact's corpus split at random (seeded) into K datasets, plus one dataset of the whole
//    corpus, uploaded through the bulk route with the real static model potion-base-2M (local
//    provider), each dataset's fusion weights chosen by the service. Over the 809 train queries, in
//    hybrid mode (chosen weights, and 0.7 / 0.3) and keyword mode, pages of 10: nDCG@10 and Recall@10 (by document, `metadata.source_id`
//    against qrels/train.tsv) of (a) one search over the K parts, (b) the whole corpus alone, (c) the
//    part holding the query's judged documents alone (the part with most of them), with (a)/(c) and
//    (a)/(b).
// 2. Latency: SciFact's two-sentence windows (bench:search's corpus: the abstracts three times over)
//    dealt at random into 20 datasets of ~6,800 chunks, loaded by the SQL loader with random unit
//    vectors; queries embedded by an OpenAI-compatible endpoint on 127.0.0.1. One client asks each
//    query over 1, 5 and 20 datasets in each mode, in alternation (the order rotates every query), so
//    that the three see the machine at the same moment and their ratios compare like with like.
//
// BENCH_DATASETS_PARTS (K, default 5), BENCH_DATASETS_QUERIES (latency queries, default 300),
// BENCH_DATASETS_RECALL=0 / BENCH_DATASETS_LATENCY=0 leave a part out.
import { resolve } from 'node:path';
import pg from 'pg';
import { ndcgAt10 } from '../dist/modules/search/evaluation/metrics.js';
import {
  apiKey,
  bulkUpload,
  createDatabase,
  createIndexes,
  dropVectorIndexes,
  finishDatasets,
  gaussian,
  insertDatasets,
  latencyStats,
  loadDocuments,
  mulberry32,
  poster,
  scifact,
  sentenceWindows,
  shuffled,
  startEmbeddingServer,
  startServer,
  timedPoster,
  writeResult,
} from './lib.mjs';

const MODELS = resolve(process.env.BENCH_MODELS ?? '../shared/models');
const POTION = 'minishlab/potion-base-2M';
const PARTS = Number(process.env.BENCH_DATASETS_PARTS ?? 5);
const QUERIES = Number(process.env.BENCH_DATASETS_QUERIES ?? 300);
const RECALL = process.env.BENCH_DATASETS_RECALL !== '0';
const LATENCY = process.env.BENCH_DATASETS_LATENCY !== '0';
/** Datasets of the latency part, and how many of them each size of search names. */
const LATENCY_DATASETS = 20;
const SIZES = [1, 5, 20];
const LATENCY_MODES = ['hybrid', 'keyword'];
const REPLICAS = 3;
const DIMS = 384;
const RANDOM_MODEL = 'bench-random-384';
const WARM_UP = 20;
/**
 * What the recall part asks: hybrid at each dataset's chosen weights, the keyword leg alone, and
 * hybrid at the weights potion-base-2M's whole corpus got in bench:relevance (0.7 / 0.3), so that the
 * merge is also measured on scores the semantic leg has a share in, whatever the parts choose.
 */
const RECALL_MODES = [
  ['hybrid', 'hybrid', undefined],
  ['keyword', 'keyword', undefined],
  ['hybrid_0.7_0.3', 'hybrid', { keyword: 0.7, semantic: 0.3 }],
];
const SEED = { parts: 49, latency: 4_900, vectors: 42 };

const { corpus, queries, qrels } = scifact();
const result = { dataset: 'BEIR SciFact', measured_at: undefined };
const benchStarted = performance.now();
if (RECALL) result.recall = await recallRun();
if (LATENCY) result.latency = await latencyRun();
result.run_seconds = Math.round((performance.now() - benchStarted) / 1000);
result.measured_at = new Date().toISOString();
summary();
console.log(`written to ${writeResult('datasets', result)}`);

/** Part 1: the K parts searched together against the whole corpus and against each query's own part. */
async function recallRun() {
  const uniform = mulberry32(SEED.parts);
  const partOf = new Map(corpus.map((doc) => [doc._id, Math.floor(uniform() * PARTS)]));
  const database = await createDatabase();
  const db = new pg.Pool({ connectionString: database.url, max: 2 });
  const server = await startServer({
    DATABASE_URL: database.url,
    REDIS_PREFIX: `bench_datasets_${process.pid}`,
    EMBEDDING_PROVIDER: 'local',
    EMBEDDING_MODEL: POTION,
    MODELS_DIR: MODELS,
    INGEST_CONCURRENCY: '32',
    RATE_LIMIT_API_KEY: '10000000',
    // Each dataset's weights are chosen once it is quiet, as bench:relevance waits for them.
    FUSION_TUNING_INTERVAL_SECONDS: '1',
  });
  const key = apiKey(database.url).api_key;
  const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
  const post = poster(server.url, headers);
  try {
    const whole = await post('/v1/datasets', { name: 'scifact' });
    const parts = [];
    for (let p = 0; p < PARTS; p++) parts.push(await post('/v1/datasets', { name: `scifact-part-${p}` }));
    const documentOf = (doc) => ({
      content: `${doc.title}\n\n${doc.text}`,
      metadata: { source_id: doc._id, title: doc.title },
    });
    console.log(`uploading ${corpus.length} documents into one dataset and into ${PARTS} parts ...`);
    const started = performance.now();
    const uploads = [[whole, corpus]];
    parts.forEach((part, p) => uploads.push([part, corpus.filter((doc) => partOf.get(doc._id) === p)]));
    for (const [dataset, docs] of uploads) {
      const { refused } = await bulkUpload(server.url, key, dataset.id, docs.map(documentOf));
      if (refused.length > 0) throw new Error(`refused: ${JSON.stringify(refused[0])}`);
    }
    for (;;) {
      const { rows } = await db.query(
        `SELECT count(*) FILTER (WHERE status = 'processing')::int AS processing,
                count(*) FILTER (WHERE status = 'failed')::int AS failed FROM documents`,
      );
      if (rows[0].failed > 0) throw new Error(`${rows[0].failed} documents failed`);
      if (rows[0].processing === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const ingestSeconds = round1((performance.now() - started) / 1000);
    const fusion = await chosenFusions(server.url, [whole, ...parts], headers);
    const { rows: sizes } = await db.query(
      `SELECT d.id, d.document_count::int AS documents, i.chunk_count::int AS chunks
         FROM datasets d JOIN dataset_index i ON i.dataset_seq = d.seq`,
    );
    console.log(`ready in ${ingestSeconds} s; weights ${JSON.stringify(fusion)}`);

    const partIds = parts.map((part) => part.id);
    const cases = {
      several: (query, mode) => ({ dataset_ids: partIds, query, mode }),
      whole: (query, mode) => ({ dataset_id: whole.id, query, mode }),
      own_part: (query, mode, home) => ({ dataset_id: partIds[home], query, mode }),
    };
    const figures = {};
    const spread = { queries: qrels.size, with_judged_documents_in_several_parts: 0 };
    for (const [label, mode, weights] of RECALL_MODES) {
      const perCase = Object.fromEntries(Object.keys(cases).map((name) => [name, { ndcg: [], recall: [] }]));
      for (const [queryId, relevant] of qrels) {
        const counts = Array(PARTS).fill(0);
        for (const docId of relevant.keys()) counts[partOf.get(docId)]++;
        if (label === 'keyword' && counts.filter(Boolean).length > 1)
          spread.with_judged_documents_in_several_parts++;
        const home = counts.indexOf(Math.max(...counts));
        for (const [name, body] of Object.entries(cases)) {
          const { results } = await post('/v1/mcp/query', {
            ...body(queries.get(queryId), mode, home),
            weights,
            limit: 10,
          });
          const ranking = [...new Set(results.map((hit) => hit.metadata.source_id))];
          perCase[name].ndcg.push(ndcgAt10(ranking, relevant));
          perCase[name].recall.push(ranking.filter((id) => relevant.has(id)).length / relevant.size);
        }
      }
      const row = Object.fromEntries(
        Object.entries(perCase).map(([name, m]) => [
          name,
          { ndcg_at_10: round4(mean(m.ndcg)), recall_at_10: round4(mean(m.recall)) },
        ]),
      );
      row.several_over_own_part = {
        ndcg_at_10: ratio(row.several.ndcg_at_10 / row.own_part.ndcg_at_10),
        recall_at_10: ratio(row.several.recall_at_10 / row.own_part.recall_at_10),
      };
      row.several_over_whole = {
        ndcg_at_10: ratio(row.several.ndcg_at_10 / row.whole.ndcg_at_10),
        recall_at_10: ratio(row.several.recall_at_10 / row.whole.recall_at_10),
      };
      figures[label] = row;
      console.log(`${label}: ${JSON.stringify(row)}`);
    }
    return {
      model: POTION,
      split: 'train',
      parts: PARTS,
      upload: 'bulk route (NDJSON, 500 documents a request, two at a time), each dataset in turn',
      ingest_seconds: ingestSeconds,
      datasets: [whole, ...parts].map((d) => ({
        name: d.name,
        ...sizes.find((s) => s.id === d.id),
        fusion: fusion[d.name],
        id: undefined,
      })),
      ...spread,
      modes: figures,
    };
  } finally {
    await server.stop();
    await db.end();
    await database.drop();
  }
}

/** Each dataset's weights once the service has chosen them (at most 3 minutes' wait), by name. */
async function chosenFusions(url, datasets, headers) {
  const deadline = performance.now() + 180_000;
  const chosen = {};
  for (const { id, name } of datasets) {
    for (;;) {
      const dataset = await (await fetch(`${url}/v1/datasets/${id}`, { headers })).json();
      if (dataset.fusion.source === 'dataset' || performance.now() > deadline) {
        chosen[name] = { source: dataset.fusion.source, ...dataset.fusion.weights };
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  return chosen;
}

/** Part 2: one query over 1, 5 and 20 datasets of ~6,800 chunks, in alternation. */
async function latencyRun() {
  const uniform = mulberry32(SEED.vectors);
  const unitVector = () => {
    const v = Array.from({ length: DIMS }, () => gaussian(uniform));
    const n = Math.hypot(...v);
    return v.map((x) => x / n);
  };
  const windows = corpus.map((doc) => sentenceWindows(doc));
  // The abstracts three times over, dealt at random into the datasets: each holds about as many chunks.
  const copies = shuffled(
    Array.from({ length: REPLICAS }, (_, r) => corpus.map((doc, d) => ({ doc, d, r }))).flat(),
    mulberry32(SEED.latency),
  );
  const datasets = Array.from({ length: LATENCY_DATASETS }, (_, i) => ({
    id: `ds_bench${String(i).padStart(17, '0')}`,
    name: `bench-${i}`,
  }));
  const database = await createDatabase();
  const db = new pg.Pool({ connectionString: database.url, max: 4 });
  const key = apiKey(database.url);
  const embedder = await startEmbeddingServer(queryVector);
  let server;
  try {
    const started = performance.now();
    const seqs = await insertDatasets(db, key.account_id, datasets, {
      model: RANDOM_MODEL,
      dimensions: DIMS,
    });
    const indexes = await dropVectorIndexes(db);
    let chunkId = 0;
    const documents = copies.map(({ doc, d, r }, i) => ({
      id: `doc_${String(i + 1).padStart(22, '0')}`,
      datasetId: datasets[i % LATENCY_DATASETS].id,
      datasetSeq: seqs[i % LATENCY_DATASETS],
      metadata: { source: `${doc._id}-${r}` },
      chunks: windows[d].map((text) => ({
        id: `chk_${String(chunkId++).padStart(22, '0')}`,
        text,
        vector: unitVector(),
      })),
    }));
    const chunks = await loadDocuments(db, documents);
    await finishDatasets(db);
    await createIndexes(db, indexes);
    await db.query('VACUUM ANALYZE');
    const loadSeconds = Math.round((performance.now() - started) / 1000);
    const { rows } = await db.query('SELECT chunk_count::int AS n FROM dataset_index ORDER BY dataset_seq');
    console.log(`${chunks} chunks in ${LATENCY_DATASETS} datasets loaded in ${loadSeconds} s`);

    server = await startServer(
      {
        DATABASE_URL: database.url,
        REDIS_PREFIX: `bench_datasets_${process.pid}`,
        ROLE: 'api',
        EMBEDDING_PROVIDER: 'openai',
        OPENAI_API_KEY: 'bench',
        OPENAI_BASE_URL: embedder.baseUrl,
        EMBEDDING_MODEL: RANDOM_MODEL,
        RATE_LIMIT_API_KEY: '10000000',
        // Reading the frequent terms' postings of 136k chunks before listening takes longer than a small
        // server's start, more so on a busy machine.
      },
      { readyMs: 300_000 },
    );
    const post = timedPoster(server.url, {
      Authorization: `Bearer ${key.api_key}`,
      'Content-Type': 'application/json',
    });
    const ids = datasets.map((d) => d.id);
    // Query i over the dataset i names, and the 5 or 20 from it: each dataset is asked as often.
    const bodyOf = (size, mode, query, i) =>
      size === 1
        ? { dataset_id: ids[i % ids.length], query, mode, limit: 10 }
        : {
            dataset_ids: Array.from({ length: size }, (_, k) => ids[(i + k) % ids.length]),
            query,
            mode,
            limit: 10,
          };
    const configs = LATENCY_MODES.flatMap((mode) => SIZES.map((size) => ({ mode, size })));
    const texts = [...queries.values()].slice(0, QUERIES);
    const round = async (sample, record) => {
      for (const [i, query] of sample.entries()) {
        // The order rotates every query, so that none always follows the same other.
        const order = configs.map((_, k) => configs[(k + i) % configs.length]);
        for (const { mode, size } of order) {
          const t = performance.now();
          const { status, json } = await post('/v1/mcp/query', bodyOf(size, mode, query, i));
          const ms = performance.now() - t;
          if (status !== 200) throw new Error(`${status} ${JSON.stringify(json)}`);
          record?.(mode, size, ms, json.query_time_ms);
        }
      }
    };
    await round(texts.slice(0, WARM_UP));
    const ms = {};
    const serverMs = {};
    for (const { mode, size } of configs) {
      ms[`${mode}_${size}`] = [];
      serverMs[`${mode}_${size}`] = [];
    }
    await round(texts, (mode, size, elapsed, took) => {
      ms[`${mode}_${size}`].push(elapsed);
      serverMs[`${mode}_${size}`].push(took);
    });
    const modes = {};
    for (const mode of LATENCY_MODES) {
      const at = Object.fromEntries(
        SIZES.map((size) => [
          size,
          {
            ...latencyStats(ms[`${mode}_${size}`]),
            server_p50_ms: latencyStats(serverMs[`${mode}_${size}`]).p50_ms,
          },
        ]),
      );
      modes[mode] = {
        datasets: at,
        ratios: Object.fromEntries(
          SIZES.slice(1).map((size) => [
            `${size}_over_1`,
            {
              p50: ratio(at[size].p50_ms / at[1].p50_ms),
              p95: ratio(at[size].p95_ms / at[1].p95_ms),
            },
          ]),
        ),
      };
    }
    return {
      datasets: LATENCY_DATASETS,
      chunks,
      chunks_per_dataset: { min: Math.min(...rows.map((r) => r.n)), max: Math.max(...rows.map((r) => r.n)) },
      vectors: `random unit vectors of ${DIMS} dimensions; queries embedded by an OpenAI-compatible endpoint on 127.0.0.1`,
      load_seconds: loadSeconds,
      queries: texts.length,
      warm_up: WARM_UP,
      limit: 10,
      modes,
    };
  } finally {
    await server?.stop();
    await embedder.close();
    await db.end();
    await database.drop();
  }
}

/** A unit vector drawn from the text's hash: the same query always gets the same one. */
function queryVector(text) {
  let seed = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) seed = Math.imul(seed ^ text.charCodeAt(i), 0x01000193);
  const uniform = mulberry32(seed);
  const v = Array.from({ length: DIMS }, () => gaussian(uniform));
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

function summary() {
  if (result.recall) {
    const r = result.recall;
    console.log(`\nrecall: SciFact train (${r.queries} queries) over ${r.parts} parts, ${r.model}`);
    for (const [mode, m] of Object.entries(r.modes)) {
      console.log(
        `  ${mode.padEnd(8)} nDCG@10 / Recall@10: several ${m.several.ndcg_at_10} / ${m.several.recall_at_10}, ` +
          `whole ${m.whole.ndcg_at_10} / ${m.whole.recall_at_10}, own part ${m.own_part.ndcg_at_10} / ${m.own_part.recall_at_10}; ` +
          `several/own part ${m.several_over_own_part.ndcg_at_10} / ${m.several_over_own_part.recall_at_10}, ` +
          `several/whole ${m.several_over_whole.ndcg_at_10} / ${m.several_over_whole.recall_at_10}`,
      );
    }
  }
  if (result.latency) {
    const l = result.latency;
    console.log(
      `\nlatency: ${l.queries} queries, ${l.datasets} datasets of ${l.chunks_per_dataset.min}-${l.chunks_per_dataset.max} chunks`,
    );
    for (const [mode, m] of Object.entries(l.modes)) {
      const cells = SIZES.map(
        (size) => `${size}: ${m.datasets[size].p50_ms} / ${m.datasets[size].p95_ms} ms`,
      );
      console.log(
        `  ${mode.padEnd(8)} p50 / p95 ${cells.join(', ')}; 5/1 ${m.ratios['5_over_1'].p50} / ${m.ratios['5_over_1'].p95}, ` +
          `20/1 ${m.ratios['20_over_1'].p50} / ${m.ratios['20_over_1'].p95}`,
      );
    }
  }
  console.log(`run ${result.run_seconds} s`);
}

function mean(xs) {
  return xs.reduce((sum, x) => sum + x, 0) / xs.length;
}

function round1(x) {
  return Math.round(x * 10) / 10;
}

function round4(x) {
  return Math.round(x * 10000) / 10000;
}

/** Ratios to two decimals: a tenth is too coarse for the differences they show. */
function ratio(x) {
  return Math.round(x * 100) / 100;
}
