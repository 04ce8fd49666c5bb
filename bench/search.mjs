// npm run bench:search — search latency and throughput on a dataset of >= 100,000 chunks, over HTTP, and
// the same queries on the same chunks and vectors in LanceDB (its own hybrid search with RRF), in one run.
//
// The corpus: every SciFact abstract cut into windows of two sentences (stride one), three times over
// with different `category` metadata: ~135k chunks of real scientific text. With a transformer model
// (BENCH_MODEL in MODELS_DIR; by default the synthetic bge-small-shaped one), chunk vectors are random
// unit vectors, loaded directly (embedding 135k chunks with a random-weight model would take an hour and
// would mean nothing either); each query is embedded at query time by the model, at its real cost, for
// both systems alike. With a static model (Model2Vec, e.g. BENCH_MODEL=minishlab/potion-base-2M
// MODELS_DIR=../shared/models), each chunk's vector is the model's own, computed here by the service's
// encoder (what ingesting the chunks would store), and LanceDB is left out (its script embeds queries
// with @huggingface/transformers only).
//
// BENCH_SEARCH_LANCEDB=0 leaves LanceDB out; BENCH_DURATION=0 leaves out the throughput runs.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import * as lancedb from '@lancedb/lancedb';
import autocannon from 'autocannon';
import pg from 'pg';
import { isStaticModelDir, loadStaticModel } from '../dist/modules/embeddings/static-model.js';
import { lanceSearch } from './lancedb-search.mjs';
import {
  apiKey,
  createDatabase,
  createIndexes,
  dropVectorIndexes,
  finishDatasets,
  gaussian,
  insertDatasets,
  loadDocuments,
  mulberry32,
  percentile,
  scifact,
  sentenceWindows,
  startServer,
  timedPoster,
  vectorIndexFor,
  writeResult,
} from './lib.mjs';

const DEFAULT_MODEL = 'synthetic/bert-L12-H384';
const MODELS_DIR = resolve(process.env.MODELS_DIR ?? '.cache/models');
const MODEL = process.env.BENCH_MODEL ?? DEFAULT_MODEL;
const STATIC = isStaticModelDir(join(MODELS_DIR, MODEL));
const staticModel = STATIC ? loadStaticModel(join(MODELS_DIR, MODEL)) : null;
const LANCEDB = !STATIC && process.env.BENCH_SEARCH_LANCEDB !== '0';
const REPLICAS = Number(process.env.BENCH_REPLICAS ?? 3);
const DIMS = staticModel?.dimensions ?? 384;
const SINGLE_QUERIES = 300;
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const CATEGORY_C1 = "category = 'c1'";

const { corpus: docs, queries: queryTexts } = scifact();
const queries = [...queryTexts.values()];

const uniform = mulberry32(42);
/** A random direction: normal coordinates (Box-Muller), normalised. */
function unitVector() {
  const v = Array.from({ length: DIMS }, () => gaussian(uniform));
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

const benchStarted = performance.now();
const chunks = [];
const windows = docs.map((doc) => sentenceWindows(doc));
// A static model's own vectors, one per window (its copies share their text, and so their vector).
const windowVectors = staticModel && windows.map((texts) => staticModel.embed(texts));
for (let r = 0; r < REPLICAS; r++) {
  for (const [d, doc] of docs.entries()) {
    for (const [w, text] of windows[d].entries()) {
      const vector = windowVectors ? windowVectors[d][w] : unitVector();
      chunks.push({ doc: `${doc._id}-${r}`, category: `c${r}`, text, vector });
    }
  }
}
console.log(
  `${chunks.length} chunks from ${docs.length} abstracts x ${REPLICAS}, ${STATIC ? `${MODEL}'s` : 'random'} vectors of ${DIMS} dimensions`,
);

const database = await createDatabase();
const db = new pg.Pool({ connectionString: database.url, max: 4 });
const key = apiKey(database.url);
const result = {
  chunks: chunks.length,
  model: MODEL,
  static_model: STATIC,
  dimensions: DIMS,
  chunk_vectors: STATIC ? 'the model’s own' : 'random unit vectors',
  duration_seconds: DURATION,
};
let server;
let lanceServer;
let dir;
try {
  // Load: documents, chunks with their vectors and postings in bulk, as the pipeline writes them.
  const t0 = performance.now();
  const datasetId = 'ds_bench00000000000000000';
  const [seq] = await insertDatasets(db, key.account_id, [{ id: datasetId, name: 'bench' }], {
    model: MODEL,
    dimensions: DIMS,
  });
  // The index the service creates (migration 4) is built once, over the loaded vectors; so is the one
  // it makes at start for another model's dimensions (EmbeddingService), which the server would
  // otherwise build before it listens.
  const indexes = await dropVectorIndexes(db);
  if (DIMS !== 384) indexes.push(await vectorIndexFor(DIMS));
  const byDoc = new Map();
  chunks.forEach((c, i) => {
    if (!byDoc.has(c.doc)) {
      byDoc.set(c.doc, {
        id: `doc_${String(byDoc.size + 1).padStart(22, '0')}`,
        datasetId,
        datasetSeq: seq,
        metadata: { category: c.category, source: c.doc },
        chunks: [],
      });
    }
    byDoc
      .get(c.doc)
      .chunks.push({ id: `chk_${String(i).padStart(22, '0')}`, text: c.text, vector: c.vector });
  });
  await loadDocuments(db, byDoc.values());
  await finishDatasets(db);
  await createIndexes(db, indexes);
  // The state autovacuum keeps a live dataset in (the migrations lower its thresholds for the
  // postings): statistics gathered and pages marked all-visible, so that index-only scans stay so.
  await db.query('VACUUM ANALYZE');
  result.load_seconds = Math.round((performance.now() - t0) / 1000);
  console.log(`loaded into PostgreSQL in ${result.load_seconds} s`);

  // LanceDB: the same chunks and vectors, its own FTS and vector indexes, hybrid search with RRF (k = 60),
  // asked with its defaults and at our depth (see bench/lancedb-search.mjs).
  let lanceQuery;
  let lanceOverHttp;
  if (LANCEDB) {
    dir = `/tmp/lancedb-bench-${process.pid}`;
    rmSync(dir, { recursive: true, force: true });
    const table = await (
      await lancedb.connect(dir)
    ).createTable(
      'chunks',
      chunks.map((c, i) => ({ id: i, text: c.text, category: c.category, vector: c.vector })),
    );
    await table.createIndex('vector', { config: lancedb.Index.hnswSq({ distanceType: 'cosine' }) });
    await table.createIndex('text', { config: lancedb.Index.fts() });
    const search = await lanceSearch({ dir, modelsDir: MODELS_DIR, model: MODEL });
    lanceQuery = (text, filtered, depth) =>
      search(text, { depth, where: filtered ? CATEGORY_C1 : undefined });
    // And LanceDB as a service: the same table and model in a process of its own, behind a minimal HTTP
    // server (bench/lancedb-server.mjs), asked over a kept-alive connection as our service is.
    lanceServer = spawn(process.execPath, [fileURLToPath(new URL('./lancedb-server.mjs', import.meta.url))], {
      env: { ...process.env, LANCE_DIR: dir, MODELS_DIR, MODEL },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lancePost = timedPoster(`http://127.0.0.1:${await listeningPort(lanceServer)}`, {
      'Content-Type': 'application/json',
    });
    lanceOverHttp = async (text, filtered, depth) => {
      const { status, json } = await lancePost('/query', {
        query: text,
        ...(depth ? { depth } : {}),
        ...(filtered ? { where: CATEGORY_C1 } : {}),
      });
      if (status !== 200) throw new Error(`LanceDB server: ${status} ${JSON.stringify(json)}`);
    };
  }

  server = await startServer({
    DATABASE_URL: database.url,
    REDIS_PREFIX: `bench_search_${process.pid}`,
    ROLE: 'api',
    EMBEDDING_PROVIDER: 'local',
    EMBEDDING_MODEL: MODEL,
    MODELS_DIR,
    RATE_LIMIT_API_KEY: '10000000',
  });
  const headers = { Authorization: `Bearer ${key.api_key}`, 'Content-Type': 'application/json' };
  const post = timedPoster(server.url, headers);
  const ask = async (path, body) => {
    const started = performance.now();
    const { status, json } = await post(path, body);
    const ms = performance.now() - started;
    if (status !== 200) throw new Error(`${status} ${JSON.stringify(json)}`);
    return { ms, json };
  };
  const latency = async (path, bodies) => {
    const ms = [];
    for (const body of bodies) ms.push((await ask(path, body)).ms);
    return { p50_ms: round(percentile(ms, 50)), p95_ms: round(percentile(ms, 95)) };
  };
  const stats = (ms) => ({ p50_ms: round(percentile(ms, 50)), p95_ms: round(percentile(ms, 95)) });
  // Each query goes to our service and then to LanceDB (each way), in alternation, so that all see the
  // same machine at the same moment (its speed drifts over minutes) and the ratios compare like with like.
  // Each process holds its own copy of the model (21 MB of weights, the size of the shared cache): no
  // way of asking runs right after another that used the same copy, which would find it still cached.
  const paired = async (bodies, filtered) => {
    const systems = {
      ours: async (body) => ask('/v1/mcp/query', body),
      ...(LANCEDB
        ? {
            lancedb: (body) => lanceQuery(body.query, filtered),
            lancedb_http: (body) => lanceOverHttp(body.query, filtered),
            lancedb_same_depth: (body) => lanceQuery(body.query, filtered, 50),
            lancedb_http_same_depth: (body) => lanceOverHttp(body.query, filtered, 50),
          }
        : {}),
    };
    return alternated(bodies, systems);
  };
  /** Each body asked of each system in turn; p50 / p95 by system. `flip` reverses the order every other body. */
  const alternated = async (bodies, systems, { flip = false } = {}) => {
    const ms = Object.fromEntries(Object.keys(systems).map((name) => [name, []]));
    for (const [i, body] of bodies.entries()) {
      const order = Object.entries(systems);
      for (const [name, run] of flip && i % 2 ? order.reverse() : order) {
        const started = performance.now();
        await run(body);
        ms[name].push(performance.now() - started);
      }
    }
    return Object.fromEntries(Object.entries(ms).map(([name, times]) => [name, stats(times)]));
  };
  const sample = queries.slice(0, SINGLE_QUERIES);
  // Warm-up of both: the first 20 queries (measured again below).
  await paired(
    sample.slice(0, 20).map((query) => ({ dataset_id: datasetId, query })),
    false,
  );
  const first = await paired(
    sample.map((query) => ({ dataset_id: datasetId, query })),
    false,
  );
  // The same queries again: the keyword leg now finds their terms' postings in memory.
  const second = await paired(
    sample.map((query) => ({ dataset_id: datasetId, query })),
    false,
  );
  const filtered = await paired(
    sample.map((query) => ({ dataset_id: datasetId, query, filters: { category: 'c1' } })),
    true,
  );
  await stopLanceServer(); // idle from here on, but not to share the machine with the load below
  result.single_hybrid = first.ours;
  result.single_hybrid_second_pass = second.ours;
  result.single_hybrid_filtered = filtered.ours;
  // Hybrid and the keyword leg alone, query by query in alternation (which goes first flips every
  // query), after the two passes above: both find the queries' postings in memory, and the difference
  // is what the vector leg, the query's embedding and the fusion add.
  const both = await alternated(
    sample.map((query) => ({ dataset_id: datasetId, query })),
    {
      hybrid: (body) => ask('/v1/mcp/query', body),
      keyword: (body) => ask('/v1/mcp/query', { ...body, mode: 'keyword' }),
    },
    { flip: true },
  );
  result.single_keyword = both.keyword;
  result.hybrid_vs_keyword = {
    hybrid: both.hybrid,
    keyword: both.keyword,
    hybrid_over_keyword_p50: ratio(both.hybrid.p50_ms / both.keyword.p50_ms),
    hybrid_over_keyword_p95: ratio(both.hybrid.p95_ms / both.keyword.p95_ms),
  };
  if (LANCEDB)
    result.lancedb = {
      version: '0.37.1',
      single_hybrid: first.lancedb,
      single_hybrid_second_pass: second.lancedb,
      single_hybrid_filtered: filtered.lancedb,
      same_depth: {
        single_hybrid: first.lancedb_same_depth,
        single_hybrid_second_pass: second.lancedb_same_depth,
        single_hybrid_filtered: filtered.lancedb_same_depth,
      },
      // Behind a minimal HTTP server in a process of its own (bench/lancedb-server.mjs).
      over_http: {
        single_hybrid: first.lancedb_http,
        single_hybrid_second_pass: second.lancedb_http,
        single_hybrid_filtered: filtered.lancedb_http,
        same_depth: {
          single_hybrid: first.lancedb_http_same_depth,
          single_hybrid_second_pass: second.lancedb_http_same_depth,
          single_hybrid_filtered: filtered.lancedb_http_same_depth,
        },
      },
    };
  result.batch_of_10 = await latency(
    '/v1/mcp/batch-query',
    Array.from({ length: 30 }, (_, i) => ({
      dataset_id: datasetId,
      queries: queries.slice(i * 10, i * 10 + 10),
    })),
  );
  result.throughput = {};
  for (const filtered of DURATION > 0 ? [false, true] : []) {
    for (const connections of [1, 8, 32]) {
      let n = 0;
      const run = await autocannon({
        url: `${server.url}/v1/mcp/query`,
        method: 'POST',
        headers,
        connections,
        duration: DURATION,
        requests: [
          {
            setupRequest: (request) => ({
              ...request,
              body: JSON.stringify({
                dataset_id: datasetId,
                query: queries[n++ % queries.length],
                ...(filtered ? { filters: { category: 'c1' } } : {}),
              }),
            }),
          },
        ],
      });
      result.throughput[`${filtered ? 'filtered' : 'hybrid'}_${connections}_clients`] = {
        requests_per_second: round(run.requests.average),
        p50_ms: run.latency.p50,
        p97_5_ms: run.latency.p97_5,
        errors: run.errors + run.non2xx,
      };
    }
  }
} finally {
  await stopLanceServer();
  await server?.stop();
  await db.end();
  await database.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}

/** LanceDB's p50 over ours (> 1: we are faster), for each pass, from one of the ways LanceDB was asked. */
const ratios = (lance) => ({
  single_hybrid: ratio(lance.single_hybrid.p50_ms / result.single_hybrid.p50_ms),
  second_pass: ratio(lance.single_hybrid_second_pass.p50_ms / result.single_hybrid_second_pass.p50_ms),
  filtered: ratio(lance.single_hybrid_filtered.p50_ms / result.single_hybrid_filtered.p50_ms),
});
if (LANCEDB) {
  result.ratios_p50_lancedb_over_ours = {
    in_process: ratios(result.lancedb),
    in_process_same_depth: ratios(result.lancedb.same_depth),
    over_http: ratios(result.lancedb.over_http),
    over_http_same_depth: ratios(result.lancedb.over_http.same_depth),
  };
}
result.targets = { single_hybrid_p50_ms: 30, single_hybrid_p95_ms: 80 };
result.run_seconds = Math.round((performance.now() - benchStarted) / 1000);
result.measured_at = new Date().toISOString();
const name = MODEL === DEFAULT_MODEL ? 'search' : `search.${basename(MODEL)}`;

console.log(`
dataset                     ${result.chunks} chunks (${MODEL} query embedding)
single hybrid (HTTP)        p50 ${result.single_hybrid.p50_ms} ms  p95 ${result.single_hybrid.p95_ms} ms   (targets 30 / 80)
single hybrid, second pass  p50 ${result.single_hybrid_second_pass.p50_ms} ms  p95 ${result.single_hybrid_second_pass.p95_ms} ms
single hybrid, filtered     p50 ${result.single_hybrid_filtered.p50_ms} ms  p95 ${result.single_hybrid_filtered.p95_ms} ms
single keyword              p50 ${result.single_keyword.p50_ms} ms  p95 ${result.single_keyword.p95_ms} ms
hybrid / keyword            p50 ${result.hybrid_vs_keyword.hybrid_over_keyword_p50}  p95 ${result.hybrid_vs_keyword.hybrid_over_keyword_p95}   (hybrid p50 ${result.hybrid_vs_keyword.hybrid.p50_ms} / p95 ${result.hybrid_vs_keyword.hybrid.p95_ms} ms in alternation with keyword)
batch of 10 (HTTP)          p50 ${result.batch_of_10.p50_ms} ms  p95 ${result.batch_of_10.p95_ms} ms
throughput (req/s)          ${Object.entries(result.throughput)
  .map(([k, v]) => `${k} ${v.requests_per_second}`)
  .join(', ')}
${LANCEDB ? lanceSummary() : 'LanceDB left out'}
run                         ${result.run_seconds} s (load ${result.load_seconds} s)
written to ${writeResult(name, result)}`);

function lanceSummary() {
  return `LanceDB p50 / ours p50 (> 1 means we are faster), first pass, second pass, filtered:
${Object.entries({
  'in process, its defaults': [result.lancedb, 'in_process'],
  'in process, our depth': [result.lancedb.same_depth, 'in_process_same_depth'],
  'over HTTP, its defaults': [result.lancedb.over_http, 'over_http'],
  'over HTTP, our depth': [result.lancedb.over_http.same_depth, 'over_http_same_depth'],
})
  .map(([name, [lance, key]]) => {
    const r = result.ratios_p50_lancedb_over_ours[key];
    return `  ${name.padEnd(26)}${r.single_hybrid} ${r.second_pass} ${r.filtered}   (LanceDB p50 ${lance.single_hybrid.p50_ms} / ${lance.single_hybrid_second_pass.p50_ms} / ${lance.single_hybrid_filtered.p50_ms} ms, p95 ${lance.single_hybrid.p95_ms})`;
  })
  .join('\n')}`;
}

async function stopLanceServer() {
  if (lanceServer && lanceServer.exitCode === null && lanceServer.signalCode === null) {
    lanceServer.kill('SIGTERM');
    await once(lanceServer, 'exit');
  }
}

/** The port a server child prints (`{"port": …}`) once it listens; rejects if it exits or fails first. */
function listeningPort(child) {
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      reject(new Error(`the LanceDB server exited (${code ?? signal}) before listening`)),
    );
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const { port } = JSON.parse(line);
        if (port) resolve(port);
      } catch {
        // a library's own output: not the line we wait for
      }
    });
  });
}

function round(x) {
  return Math.round(x * 10) / 10;
}

/** Ratios to two decimals: a tenth is too coarse for the differences they show. */
function ratio(x) {
  return Math.round(x * 100) / 100;
}
