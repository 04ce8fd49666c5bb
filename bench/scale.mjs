// npm run bench:scale — vector search as datasets multiply and filters narrow: latency over HTTP, and
// recall of the vector leg against the exact nearest chunks, on vectors with structure.
//
// Chunks: every SciFact abstract cut into windows of two sentences (bench:search's 45,256), the corpus
// repeated as often as a scenario needs, each repeat of the abstracts in its own seeded order. A
// window's vector is its TF-IDF vector projected to 384 dimensions (bench/projected-vectors.mjs); each
// chunk's copy is moved by a small seeded offset, so that no two chunks share a vector. The queries are
// SciFact's, projected alike by an OpenAI-compatible endpoint on 127.0.0.1; the synthetic local
// model's cost of embedding a query is measured apart, for readers to add to the latencies.
//
// (a) 135,768 chunks in one database and account: datasets of 60k, 30k, 10k, 10k and fifty of ~515
//     chunks in the shared index, against the 60k and the 30k each alone in a database of its own.
// (c) metadata filters keeping 50%, 10% and 1% of the 60k dataset's documents, in both databases.
// (b) with BENCH_SCALE_MILLION=1, also 1,000,000 chunks over 1,000 datasets of Zipf-distributed sizes:
//     load throughput, HNSW build time (predicted first from two smaller builds), latency by size class.
// (d) with BENCH_SCALE_CITUS=1, instead of the others: (b)'s million chunks on the local Citus cluster of
//     scripts/cluster.sh (a coordinator, two workers) and in a plain database of the coordinator's
//     PostgreSQL (the same server, settings and binaries), both loaded and asked in turn: latency by
//     size class, load throughput and the pipeline's own ingestion, Citus over one PostgreSQL.
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { setImmediate } from 'node:timers/promises';
import pg from 'pg';
import { documentCondition, parseFilters } from '../dist/modules/search/filters.js';
import { ChunkReadsRepository } from '../dist/modules/chunk-index/chunk-reads.repository.js';
import { scansExactly } from '../dist/modules/search/vector-leg.js';
import { perturbed, randomDirection, tfidfProjection } from './projected-vectors.mjs';
import {
  apiKey,
  bulkUpload,
  createCitusDatabase,
  createDatabase,
  createIndexes,
  dropVectorIndexes,
  finishDatasets,
  insertDatasets,
  latencyStats,
  loadDocuments,
  mulberry32,
  queryEmbeddingCost,
  runWorker,
  scifact,
  sentenceWindows,
  shuffled,
  startEmbeddingServer,
  startServer,
  startWorkers,
  timedPoster,
  writeResult,
} from './lib.mjs';

const DIMS = 384;
const MODEL = 'bench-tfidf-384';
const QUERY_MODEL = process.env.BENCH_MODEL ?? 'synthetic/bert-L12-H384';
const MODELS_DIR = process.env.MODELS_DIR ?? '.cache/models';
const QUERIES = Number(process.env.BENCH_SCALE_QUERIES ?? 300);
const FILTER_QUERIES = Number(process.env.BENCH_SCALE_FILTER_QUERIES ?? QUERIES);
const MILLION = process.env.BENCH_SCALE_MILLION === '1';
/** The chunks of (b): a million, or fewer on a smaller machine. */
const MILLION_CHUNKS = Number(process.env.BENCH_SCALE_MILLION_CHUNKS ?? 1_000_000);
const CITUS = process.env.BENCH_SCALE_CITUS === '1';
/** (d)'s one PostgreSQL: the coordinator's server, a database without the citus extension. */
const PLAIN_ADMIN_URL =
  process.env.BENCH_SCALE_PLAIN_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5433/postgres';
/** (d)'s pipeline ingestion: SciFact abstracts uploaded into a new dataset of each loaded database. */
const INGEST_DOCUMENTS = Number(process.env.BENCH_SCALE_INGEST_DOCUMENTS ?? 1_000);
const WARM_UP = 20;
/** Queries of the cost model's check, each timed as an exact scan and as a walk. */
const COST_MODEL_QUERIES = 60;
/** The service's default `SEARCH_DATASET_INDEX_MIN_CHUNKS`: datasets from this size get their own index. */
const OWN_INDEX_MIN_CHUNKS = 20_000;
/** The depth recall is measured at: the vector leg's candidates, and the API's largest page. */
const K = 50;
/** The length of the offset that tells a chunk's vector from its window's (cosine 0.98). */
const NOISE = 0.2;
/**
 * `maintenance_work_mem` of the HNSW builds: enough for a million vectors' graph to be built in memory
 * (pgvector says when it is not, in the notices kept with each build's time).
 */
const BUILD_MEMORY = '2GB';
/**
 * The same on each Citus worker, for one shard's graph (a 32nd of the table, and the largest dataset's
 * own index): Citus builds a worker's shards at once, up to 16, each with its own allowance.
 */
const SHARD_BUILD_MEMORY = '256MB';
/** Seeds: the projection, each repeat's order of the abstracts, each chunk's offset, each dataset's parts. */
const SEED = { projection: 35, replica: 1_000, chunk: 2_000_000, part: 3_000 };
/** Metadata `part` of a dataset's documents: the filters of (c), each keeping its share of documents. */
const PARTS = [
  ['p50', 0.5],
  ['p10', 0.1],
  ['p1', 0.01],
];
/**
 * What each case is asked: the vector leg alone with a page of 50 (its latency, and the answers whose
 * recall is measured), then hybrid and keyword at the default page (5).
 */
const MODES = [
  ['semantic', { mode: 'semantic', limit: K }],
  ['hybrid', { mode: 'hybrid' }],
  ['keyword', { mode: 'keyword' }],
];
/** Size classes of (b), by chunks; above 20,000 (SEARCH_EXACT_SCAN_MAX_CHUNKS) the index is walked. */
const CLASSES = [
  ['>20k', 20_000, Infinity],
  ['5k-20k', 5_000, 20_000],
  ['1k-5k', 1_000, 5_000],
  ['<1k', 0, 1_000],
];

/** The machine's load average (1, 5, 15 minutes) at a point of the run, and the seconds run by then. */
const load = (at) => ({
  at,
  seconds: Math.round(performance.now() / 1000),
  load_average: os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' '),
});
const result = {
  machine: { cores: os.cpus().length, load: [load('start')] },
  vectors: {
    method: `TF-IDF of each window over the corpus's vocabulary, projected by a seeded Gaussian matrix to ${DIMS} dimensions, normalised; each chunk's copy moved by a seeded offset of length ${NOISE}`,
    model: MODEL,
  },
  queries: QUERIES,
  filter_queries: FILTER_QUERIES,
};

// The corpus, its windows' vectors and the queries' (as the endpoint serves them to the service).
const { corpus, queries: queryTexts } = scifact();
const queries = [...queryTexts.values()].slice(0, QUERIES);
const abstracts = [];
const windows = [];
for (const doc of corpus) {
  abstracts.push({ source: doc._id, firstWindow: windows.length, windows: sentenceWindows(doc) });
  windows.push(...abstracts.at(-1).windows);
}
const projection = tfidfProjection(windows, { dimensions: DIMS, seed: SEED.projection });
result.vectors.vocabulary = projection.vocabulary;
const windowVectors = windows.map((text, i) => projection.embed(text) ?? randomDirection(-1 - i, DIMS));
const queryVectors = new Map();
const queryVector = (text) => {
  if (!queryVectors.has(text)) queryVectors.set(text, projection.embed(text) ?? randomDirection(-1, DIMS));
  return queryVectors.get(text);
};
const chunkVector = (chunk, window) => perturbed(windowVectors[window], SEED.chunk + chunk, NOISE);
console.log(`${windows.length} windows, vocabulary of ${projection.vocabulary} words`);

result.query_embedding = await queryEmbeddingCost(queries, { modelsDir: MODELS_DIR, model: QUERY_MODEL });
console.log(`query embedding (${QUERY_MODEL}): p50 ${result.query_embedding.p50_ms} ms`);

const embedder = await startEmbeddingServer(queryVector);
const resources = [];
try {
  if (CITUS) {
    await scenarioD();
  } else {
    await scenariosAC();
    if (MILLION) await scenarioB();
  }
} finally {
  for (const release of resources.reverse()) await release();
  await embedder.close();
}
result.machine.load.push(load('end'));
result.measured_at = new Date().toISOString();
result.targets = targets();
summary();
console.log(`written to ${writeResult('scale', result)}`);

/** (a) and (c): the shared database and the two large datasets each alone, asked in turn. */
async function scenariosAC() {
  const datasets = layout('mix', [60_000, 30_000, 10_000, 10_000, ...Array(50).fill(25_768 / 50)]);
  const [large, medium, ten1, ten2, ...small] = datasets;
  for (const dataset of datasets) matrixOf(dataset); // held: loaded three times, searched exactly
  result.a = { datasets: datasets.length, chunks: sum(datasets.map((d) => d.chunks)), load: {} };
  const shared = await serve('shared', datasets, result.a.load);
  const alone60 = await serve('alone_60k', [large], result.a.load);
  const alone30 = await serve('alone_30k', [medium], result.a.load);
  result.machine.load.push(load('loaded (a)'));

  const a = [
    { name: '60k', index: 'shared', post: shared, pick: () => large },
    { name: '60k', index: 'alone', post: alone60, pick: () => large },
    { name: '30k', index: 'shared', post: shared, pick: () => medium },
    { name: '30k', index: 'alone', post: alone30, pick: () => medium },
    { name: '10k', index: 'shared', post: shared, pick: (i) => (i % 2 ? ten2 : ten1) },
    { name: '~515', index: 'shared', post: shared, pick: (i) => small[i % small.length] },
  ];
  await measure(a, queries);
  result.a.rows = a.map(row);
  result.a.shared_over_alone = ['60k', '30k'].map((name) => {
    const [s, alone] = ['shared', 'alone'].map((index) =>
      a.find((c) => c.name === name && c.index === index),
    );
    // Paired by query: the two graphs are built apart, and differ by chance as much as by design.
    const differences = s.recall50.map((r, i) => r - alone.recall50[i]);
    const sd = Math.sqrt(
      sum(differences.map((d) => (d - mean(differences)) ** 2)) / (differences.length - 1),
    );
    return {
      dataset: name,
      ...ratios(s, alone),
      recall_at_50_difference: round3(recall(s) - recall(alone)),
      recall_at_50_difference_standard_error: round3(sd / Math.sqrt(differences.length)),
    };
  });
  result.a.hybrid_p95_by_class = Object.fromEntries(
    CLASSES.map(([label, min, max]) => [
      label,
      a
        .filter((c) => c.index === 'shared' && inClass(c.pick(0).chunks, min, max))
        .flatMap((c) => c.ms.hybrid),
    ])
      .filter(([, ms]) => ms.length > 0)
      .map(([label, ms]) => [label, latencyStats(ms).p95_ms]),
  );
  result.machine.load.push(load('measured (a)'));

  const c = [];
  for (const [index, post] of [
    ['shared', shared],
    ['alone', alone60],
  ]) {
    c.push({ name: '60k', index, post, pick: () => large });
    for (const [part, share] of PARTS)
      c.push({ name: '60k', index, post, pick: () => large, part, keeps: share });
  }
  await measure(c, queries.slice(0, FILTER_QUERIES));
  result.c = {
    dataset: { documents: large.documents.length, chunks: large.chunks },
    rows: c
      .filter((x) => x.part)
      .map((x) => {
        const unfiltered = c.find((y) => y.index === x.index && !y.part);
        return {
          ...row(x),
          filter: { part: x.part },
          keeps_documents: x.keeps,
          passing_chunks: sum(large.documents.filter((d) => d.part === x.part).map((d) => d.chunks)),
          filtered_over_unfiltered: ratios(x, unfiltered),
        };
      }),
    unfiltered: c.filter((x) => !x.part).map(row),
  };
  result.machine.load.push(load('measured (c)'));
  result.cost_model = await costModel(shared.db, [
    { dataset: large, indexed: large.chunks },
    ...PARTS.map(([part]) => ({ dataset: large, indexed: large.chunks, part })),
    { dataset: medium, indexed: medium.chunks },
    { dataset: ten1, indexed: result.a.chunks },
    { dataset: small[0], indexed: result.a.chunks },
  ]);
  for (const dataset of datasets) delete dataset.matrix;
}

/** (b): a million chunks over a thousand datasets, Zipf-distributed (sizes ∝ 1/rank). */
async function scenarioB() {
  while (resources.length > 0) await resources.pop()(); // (a)'s databases: the machine to itself
  const datasets = zipfLayout();
  result.b = { datasets: datasets.length, chunks: sum(datasets.map((d) => d.chunks)), load: {} };
  const trial = [Math.round(result.b.chunks / 10), Math.round(result.b.chunks / 5)];
  result.b.index_trial = await indexTrial(datasets, trial, result.b.chunks);
  console.log(
    `HNSW build predicted at ${result.b.chunks} chunks: ${result.b.index_trial.predicted_seconds} s`,
  );
  const post = await serve('million', datasets, result.b.load, { readyMs: 120_000 });
  result.machine.load.push(load('loaded (b)'));

  const b = CLASSES.map(([label, min, max]) => {
    const members = datasets.filter((d) => inClass(d.chunks, min, max));
    return { name: label, index: 'shared', post, pick: (i) => members[i % members.length], members };
  });
  await measure(b, queries, { transient: true });
  result.b.rows = b.map((c) => ({ ...row(c), datasets: c.members.length }));
  result.b.hybrid_p95_over_136k = Object.fromEntries(
    b
      .filter((c) => result.a?.hybrid_p95_by_class[c.name])
      .map((c) => [c.name, round2(latencyStats(c.ms.hybrid).p95_ms / result.a.hybrid_p95_by_class[c.name])]),
  );
  result.machine.load.push(load('measured (b)'));
}

/**
 * (d): (b)'s datasets on Citus with two workers and in one PostgreSQL, each database loaded and indexed
 * alone, then both asked query by query in turn; the pipeline's ingestion into each after.
 */
async function scenarioD() {
  const datasets = zipfLayout();
  result.d = {
    datasets: datasets.length,
    chunks: sum(datasets.map((d) => d.chunks)),
    plain_admin_url: PLAIN_ADMIN_URL,
    load: {},
  };
  const engines = {
    postgres: () => createDatabase(PLAIN_ADMIN_URL),
    // The shards' HNSW builds read the workers' own setting (a SET on the coordinator stays there).
    citus: () => createCitusDatabase({ workerSettings: { maintenance_work_mem: SHARD_BUILD_MEMORY } }),
  };
  const posts = {};
  for (const [engine, create] of Object.entries(engines)) {
    posts[engine] = await serve(engine, datasets, result.d.load, { readyMs: 120_000, create });
    result.machine.load.push(load(`loaded (d) ${engine}`));
  }
  // A smaller run (BENCH_SCALE_MILLION_CHUNKS) may leave a class empty.
  const classes = CLASSES.map(([label, min, max]) => ({
    label,
    members: datasets.filter((x) => inClass(x.chunks, min, max)),
  })).filter((c) => c.members.length > 0);
  const d = Object.keys(engines).flatMap((engine) =>
    classes.map(({ label, members }) => ({
      name: label,
      index: engine,
      post: posts[engine],
      pick: (i) => members[i % members.length],
      members,
    })),
  );
  await measure(d, queries, { transient: true });
  result.machine.load.push(load('measured (d)'));
  result.d.rows = d.map((c) => ({ ...row(c), datasets: c.members.length }));
  result.d.citus_over_postgres = Object.fromEntries(
    classes.map(({ label }) => {
      const [citus, postgres] = ['citus', 'postgres'].map((e) =>
        d.find((c) => c.name === label && c.index === e),
      );
      return [label, ratios(citus, postgres)];
    }),
  );
  result.d.load_throughput_citus_over_postgres = round2(
    result.d.load.citus.chunks_per_second / result.d.load.postgres.chunks_per_second,
  );
  result.d.ingest = {};
  for (const engine of Object.keys(engines)) result.d.ingest[engine] = await ingest(posts[engine]);
  result.d.ingest.throughput_citus_over_postgres = round2(
    result.d.ingest.citus.documents_per_second / result.d.ingest.postgres.documents_per_second,
  );
  result.machine.load.push(load('ingested (d)'));
}

/**
 * The pipeline's throughput on a loaded database: `INGEST_DOCUMENTS` SciFact abstracts uploaded in
 * bulk into a new dataset and processed by one worker (embedding by the bench's endpoint), from the
 * first upload to the last document ready.
 */
async function ingest(post) {
  // An account of its own: the loaded one holds the contract's 1,000 datasets.
  const { api_key: key } = apiKey(post.env.DATABASE_URL, `ingest-${randomUUID()}`);
  const created = await fetch(`${post.baseUrl}/v1/datasets`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'ingest' }),
  });
  const dataset = await created.json();
  if (created.status !== 201) throw new Error(`ingest: dataset not created: ${JSON.stringify(dataset)}`);
  const workers = await startWorkers({ ...post.env, FUSION_TUNING_MIN_CHUNKS: '10000000' }, 1);
  try {
    const started = performance.now();
    const documents = corpus
      .slice(0, INGEST_DOCUMENTS)
      .map((doc) => ({ content: `${doc.title}\n\n${doc.text}` }));
    const { refused } = await bulkUpload(post.baseUrl, key, dataset.id, documents);
    if (refused.length > 0)
      throw new Error(`ingest: ${refused.length} refused: ${JSON.stringify(refused[0])}`);
    for (;;) {
      const { rows } = await post.db.query(
        `SELECT count(*) FILTER (WHERE status = 'processing')::int AS processing,
                count(*) FILTER (WHERE status = 'failed')::int AS failed, coalesce(sum(chunks_created), 0)::int AS chunks
           FROM documents WHERE dataset_id = $1`,
        [dataset.id],
      );
      if (rows[0].processing === 0) {
        const seconds = (performance.now() - started) / 1000;
        if (rows[0].failed > 0) throw new Error(`ingest: ${rows[0].failed} documents failed`);
        return {
          documents: documents.length,
          chunks: rows[0].chunks,
          seconds: round2(seconds),
          documents_per_second: round2(documents.length / seconds),
        };
      }
      await new Promise((done) => setTimeout(done, 200));
    }
  } finally {
    await workers.stop();
  }
}

/** (b)'s thousand datasets of Zipf-distributed sizes (∝ 1/rank) over `MILLION_CHUNKS`. */
function zipfLayout() {
  const harmonic = sum(Array.from({ length: 1000 }, (_, k) => 1 / (k + 1)));
  return layout(
    'zipf',
    Array.from({ length: 1000 }, (_, k) => MILLION_CHUNKS / ((k + 1) * harmonic)),
  );
}

/**
 * Datasets of about `sizes` chunks, filled in order from the corpus repeated: each repeat (replica)
 * of the abstracts in its own seeded order, an abstract a document, which goes to the dataset in whose
 * share of the running total it starts. Chunk n of that sequence is `chk_<n>`. Each dataset's
 * documents are then given their `part`, in shares of its documents (PARTS), the rest `rest`.
 */
function layout(label, sizes) {
  const ends = [];
  for (const size of sizes) ends.push((ends.at(-1) ?? 0) + size);
  const total = Math.round(ends.at(-1));
  const datasets = sizes.map((_, k) => ({
    id: `ds_${label}${String(k).padStart(22 - label.length, '0')}`,
    name: `${label}-${k}`,
    documents: [],
    chunks: 0,
  }));
  let chunk = 0;
  let k = 0;
  for (let replica = 0; chunk < total; replica++) {
    const order = shuffled(abstracts.keys(), mulberry32(SEED.replica + replica));
    for (const abstract of order) {
      if (chunk >= total) break;
      while (chunk >= ends[k]) k++;
      const chunks = abstracts[abstract].windows.length;
      datasets[k].documents.push({ number: -1, abstract, replica, firstChunk: chunk, chunks, part: 'rest' });
      datasets[k].chunks += chunks;
      chunk += chunks;
    }
  }
  let number = 0;
  for (const [k, dataset] of datasets.entries()) {
    for (const document of dataset.documents) document.number = number++;
    const order = shuffled(dataset.documents, mulberry32(SEED.part + k));
    let at = 0;
    for (const [part, share] of PARTS) {
      const end = at + Math.round(share * order.length);
      for (; at < end; at++) order[at].part = part;
    }
  }
  return datasets.filter((d) => d.chunks > 0);
}

/** The documents of `datasets` as `loadDocuments` writes them. */
function* documentsOf(datasets, seqs) {
  for (const [k, dataset] of datasets.entries()) {
    for (const [d, document] of dataset.documents.entries()) {
      const abstract = abstracts[document.abstract];
      yield {
        id: `doc_${String(document.number).padStart(22, '0')}`,
        datasetId: dataset.id,
        datasetSeq: seqs[k],
        metadata: { source: abstract.source, replica: document.replica, part: document.part },
        chunks: abstract.windows.map((text, i) => ({
          id: chunkId(document.firstChunk + i),
          text,
          vector: dataset.matrix
            ? dataset.matrix.vectorOf(dataset.matrix.rowOf[d] + i)
            : chunkVector(document.firstChunk + i, abstract.firstWindow + i),
        })),
      };
    }
  }
}

function chunkId(n) {
  return `chk_${String(n).padStart(22, '0')}`;
}

/**
 * A database holding `datasets` (one account), loaded, indexed and vacuumed as autovacuum keeps a live
 * one, and a server on it; how long each step took goes to `figures[name]`. Returns the server's
 * `post`. The database and server are released at the end (`resources`).
 */
async function serve(name, datasets, figures, { readyMs, create = createDatabase } = {}) {
  const database = await create();
  resources.push(() => database.drop());
  const db = new pg.Pool({ connectionString: database.url, max: 2 });
  resources.push(() => db.end());
  const key = apiKey(database.url);
  const indexes = await dropVectorIndexes(db);
  let started = performance.now();
  const seqs = await insertDatasets(db, key.account_id, datasets, { model: MODEL, dimensions: DIMS });
  const chunks = await loadDocuments(db, documentsOf(datasets, seqs));
  await finishDatasets(db);
  const loadSeconds = (performance.now() - started) / 1000;
  const build = await createIndexes(db, indexes, BUILD_MEMORY);
  started = performance.now();
  await db.query('VACUUM ANALYZE');
  const vacuumSeconds = (performance.now() - started) / 1000;
  const env = {
    DATABASE_URL: database.url,
    REDIS_PREFIX: `bench_scale_${process.pid}_${name}`,
    EMBEDDING_PROVIDER: 'openai',
    OPENAI_API_KEY: 'bench',
    OPENAI_BASE_URL: embedder.baseUrl,
    EMBEDDING_MODEL: MODEL,
  };
  const own = await ownIndexes(db, env);
  figures[name] = {
    datasets: datasets.length,
    chunks,
    load_seconds: Math.round(loadSeconds),
    chunks_per_second: Math.round(chunks / loadSeconds),
    hnsw_build_seconds: build.seconds,
    hnsw_build_notices: build.notices,
    maintenance_work_mem:
      name === 'citus' ? `${SHARD_BUILD_MEMORY} on each worker` : build.maintenance_work_mem,
    vacuum_analyze_seconds: Math.round(vacuumSeconds),
    own_indexes: own,
  };
  console.log(`${name}: ${JSON.stringify(figures[name])}`);
  const server = await startServer({ ...env, ROLE: 'api', RATE_LIMIT_API_KEY: '10000000' }, { readyMs });
  resources.push(() => server.stop());
  const post = timedPoster(server.url, {
    Authorization: `Bearer ${key.api_key}`,
    'Content-Type': 'application/json',
  });
  Object.assign(post, { db, env, baseUrl: server.url });
  return post;
}

/**
 * The per-dataset HNSW indexes (docs/search.md), built by the service's own worker as at its start:
 * one worker runs until every dataset of `SEARCH_DATASET_INDEX_MIN_CHUNKS` chunks (its default) or more
 * has its index recorded. Each build's time comes from the worker's log.
 */
async function ownIndexes(db, env) {
  const started = performance.now();
  const built = await runWorker(
    env,
    async () => {
      const { rows } = await db.query(
        `SELECT count(*)::int AS lacking FROM dataset_index
          WHERE chunk_count >= $1 AND vector_index_dimensions IS DISTINCT FROM embedding_dimensions`,
        [OWN_INDEX_MIN_CHUNKS],
      );
      return rows[0].lacking === 0;
    },
    { messages: ['built the vector index of a dataset'] },
  );
  return {
    count: built.length,
    build_seconds: built.map((entry) => round2(entry.ms / 1000)),
    worker_seconds: round2((performance.now() - started) / 1000),
  };
}

/**
 * HNSW build times of the first `sizes` chunk vectors, in a table of their own (the index the service
 * builds: half precision, cosine, its defaults m 16, ef_construction 64), and the time predicted at
 * `target` chunks from the last two, as a power of the size fitted through them.
 */
async function indexTrial(datasets, sizes, target) {
  const database = await createDatabase();
  const db = new pg.Pool({ connectionString: database.url, max: 2 });
  try {
    await db.query('CREATE TABLE trial (n int PRIMARY KEY, embedding vector NOT NULL)');
    const limit = Math.max(...sizes);
    let part = [];
    let written = 0;
    const write = async () => {
      await db.query(
        `INSERT INTO trial SELECT $1 + n, e::vector FROM unnest($2::text[]) WITH ORDINALITY AS t(e, n)`,
        [written - 1, part],
      );
      written += part.length;
      part = [];
    };
    for (const document of datasets.flatMap((dataset) => dataset.documents)) {
      for (let i = 0; i < document.chunks && written + part.length < limit; i++) {
        const window = abstracts[document.abstract].firstWindow + i;
        part.push(`[${Array.from(chunkVector(document.firstChunk + i, window), (x) => x.toPrecision(9))}]`);
        if (part.length === 5_000) await write();
      }
      if (written + part.length === limit) break;
    }
    if (part.length > 0) await write();
    await db.query('VACUUM ANALYZE trial');
    const builds = [];
    for (const size of sizes) {
      const index = {
        name: `trial_${size}`,
        definition: `CREATE INDEX trial_${size} ON trial USING hnsw ((embedding::halfvec(${DIMS})) halfvec_cosine_ops) WHERE n < ${size}`,
      };
      const build = await createIndexes(db, [index], BUILD_MEMORY);
      builds.push({ chunks: size, seconds: build.seconds[index.name], notices: build.notices });
    }
    const [x, y] = builds.slice(-2);
    const exponent = Math.log(y.seconds / x.seconds) / Math.log(y.chunks / x.chunks);
    return {
      builds,
      exponent: round2(exponent),
      predicted_chunks: target,
      predicted_seconds: Math.round(y.seconds * (target / y.chunks) ** exponent),
    };
  } finally {
    await db.end();
    await database.drop();
  }
}

/**
 * The vector leg's cost model (`scansExactly`) against the two ways it chooses between, timed on the
 * leg's own statement (`ChunkReadsRepository.nearest`) with the search sessions' settings: for each case
 * (a dataset, under a filter or not, and the chunks of the HNSW index it walks), the median of
 * `COST_MODEL_QUERIES` exact scans and walks, alternated; what a row of the scan costs; the walk in
 * rows of the scan per candidate, which the model takes as `WALK_ROWS_PER_CANDIDATE`; and whether the
 * model chooses the faster.
 */
async function costModel(db, cases) {
  const client = await db.connect();
  try {
    // As SearchPool sets every search session.
    await client.query(
      `SET jit = off; SET hnsw.iterative_scan = relaxed_order; SET hnsw.ef_search = ${K}; SET hnsw.max_scan_tuples = 200000`,
    );
    const read = async (text, values) => (await client.query(text, values)).rows;
    const repository = new ChunkReadsRepository();
    const out = [];
    for (const c of cases) {
      const [{ seq }] = await read('SELECT seq FROM datasets WHERE id = $1', [c.dataset.id]);
      const chunks = c.part
        ? sum(c.dataset.documents.filter((d) => d.part === c.part).map((d) => d.chunks))
        : c.dataset.chunks;
      const ms = { exact: [], walk: [] };
      let found = 0;
      for (const [i, text] of queries.slice(0, COST_MODEL_QUERIES).entries()) {
        const query = {
          datasetSeq: seq,
          datasetId: c.dataset.id,
          model: MODEL,
          vector: queryVector(text),
          candidates: K,
          shown: 5,
          condition: c.part ? documentCondition(parseFilters({ part: c.part })) : null,
        };
        for (const exact of i % 2 ? [true, false] : [false, true]) {
          const started = performance.now();
          const rows = await repository.nearest(read, { ...query, exact });
          ms[exact ? 'exact' : 'walk'].push(performance.now() - started);
          if (!exact) found += rows.length;
        }
      }
      const exact = latencyStats(ms.exact).p50_ms;
      const walk = latencyStats(ms.walk).p50_ms;
      const searched = { chunks, indexed: Math.max(c.indexed, chunks) };
      const rowMs = exact / chunks;
      out.push({
        dataset: c.dataset.name,
        part: c.part ?? null,
        chunks,
        indexed: searched.indexed,
        exact_p50_ms: exact,
        walk_p50_ms: walk,
        walk_found_mean: round2(found / COST_MODEL_QUERIES),
        scan_us_per_row: round3(rowMs * 1000),
        walk_rows_per_candidate: Math.round(walk / rowMs / K / (searched.indexed / chunks)),
        // Unbounded by SEARCH_EXACT_SCAN_MAX_CHUNKS: the cost comparison itself.
        model_scans_exactly: scansExactly(searched, K, Infinity),
        faster: exact <= walk ? 'exact' : 'walk',
      });
    }
    return out;
  } finally {
    client.release();
  }
}

/**
 * Asks every case each query in turn, so that all see the machine at the same moment (its speed drifts
 * by tens of percent over minutes): the first 20 unmeasured, then every query in each of `MODES`; the
 * semantic answers are compared with the exact nearest chunks of the dataset within the case's filter.
 * `transient`: each dataset's vectors are held only while its exact answers are computed.
 */
async function measure(cases, texts, { transient = false } = {}) {
  const exact = new Map();
  for (const c of cases) {
    c.ms = Object.fromEntries(MODES.map(([mode]) => [mode, []]));
    c.recall50 = [];
    c.recall10 = [];
    c.exact = texts.map((text, i) => {
      const dataset = c.pick(i);
      const key = `${dataset.id} ${c.part} ${i}`;
      if (!exact.has(key)) exact.set(key, { dataset, part: c.part, vector: queryVector(text) });
      return exact.get(key);
    });
  }
  const byDataset = Map.groupBy(exact.values(), (e) => e.dataset);
  for (const [dataset, entries] of byDataset) {
    const matrix = matrixOf(dataset);
    for (const entry of entries) entry.nearest = nearest(matrix, entry.vector, entry.part);
    if (transient) delete dataset.matrix;
  }
  await setImmediate(); // the closes of idle connections that came in meanwhile are seen first
  const ask = async (c, i, text, body) => {
    const started = performance.now();
    const { status, json } = await c.post('/v1/mcp/query', {
      dataset_id: c.pick(i).id,
      query: text,
      ...(c.part ? { filters: { part: c.part } } : {}),
      ...body,
    });
    const ms = performance.now() - started;
    if (status !== 200) throw new Error(`${c.index} ${c.name}: ${status} ${JSON.stringify(json)}`);
    return { ms, results: json.results };
  };
  for (const [i, text] of texts.slice(0, WARM_UP).entries()) {
    for (const c of cases) for (const [, body] of MODES) await ask(c, i, text, body);
  }
  for (const [mode, body] of MODES) {
    for (const [i, text] of texts.entries()) {
      for (const c of cases) {
        const { ms, results } = await ask(c, i, text, body);
        c.ms[mode].push(ms);
        if (mode !== 'semantic') continue;
        const found = results.map((r) => Number(r.chunk_id.slice(4)));
        const truth = c.exact[i].nearest;
        c.recall50.push(overlap(found, truth) / Math.min(K, truth.length));
        c.recall10.push(overlap(found.slice(0, 10), truth.slice(0, 10)) / Math.min(10, truth.length));
      }
    }
  }
}

/**
 * A dataset's chunk vectors in one matrix, with their norms, chunk numbers and parts (memoised on the
 * dataset): what the exact nearest chunks are computed from.
 */
function matrixOf(dataset) {
  if (dataset.matrix) return dataset.matrix;
  const vectors = new Float32Array(dataset.chunks * DIMS);
  const norms = new Float64Array(dataset.chunks);
  const numbers = new Int32Array(dataset.chunks);
  const parts = [];
  const rowOf = [];
  let row = 0;
  for (const document of dataset.documents) {
    rowOf.push(row);
    for (let i = 0; i < document.chunks; i++, row++) {
      const vector = chunkVector(document.firstChunk + i, abstracts[document.abstract].firstWindow + i);
      vectors.set(vector, row * DIMS);
      norms[row] = Math.sqrt(vector.reduce((s, x) => s + x * x, 0));
      numbers[row] = document.firstChunk + i;
      parts.push(document.part);
    }
  }
  const vectorOf = (r) => vectors.subarray(r * DIMS, (r + 1) * DIMS);
  dataset.matrix = { vectors, norms, numbers, parts, rowOf, vectorOf };
  return dataset.matrix;
}

/**
 * The chunk numbers of the `K` rows of `matrix` nearest `query` by cosine (as pgvector computes it over
 * the stored single-precision vectors), nearest first, among the rows of `part` when given.
 */
function nearest(matrix, query, part) {
  const best = []; // [cosine, number], nearest last
  for (let row = 0; row < matrix.numbers.length; row++) {
    if (part && matrix.parts[row] !== part) continue;
    let dot = 0;
    for (let d = 0, at = row * DIMS; d < DIMS; d++) dot += query[d] * matrix.vectors[at + d];
    const cosine = dot / matrix.norms[row];
    if (best.length === K) {
      if (cosine <= best[0][0]) continue;
      best.shift();
    }
    let at = 0;
    while (at < best.length && best[at][0] < cosine) at++;
    best.splice(at, 0, [cosine, matrix.numbers[row]]);
  }
  return best.reverse().map(([, number]) => number);
}

function overlap(found, truth) {
  const wanted = new Set(truth);
  return found.filter((n) => wanted.has(n)).length;
}

/** A case's figures. */
function row(c) {
  const datasets = new Set(c.exact.map((e) => e.dataset));
  return {
    dataset: c.name,
    index: c.index,
    chunks: Math.round(sum([...datasets].map((d) => d.chunks)) / datasets.size),
    semantic_limit_50: latencyStats(c.ms.semantic),
    hybrid: latencyStats(c.ms.hybrid),
    keyword: latencyStats(c.ms.keyword),
    recall_at_50: recall(c),
    recall_at_10: round3(mean(c.recall10)),
  };
}

/** p50 and p95 of `c` over those of `reference`, by mode. */
function ratios(c, reference) {
  const out = {};
  for (const [mode] of MODES) {
    const [x, y] = [latencyStats(c.ms[mode]), latencyStats(reference.ms[mode])];
    out[`${mode}_p50`] = round2(x.p50_ms / y.p50_ms);
    out[`${mode}_p95`] = round2(x.p95_ms / y.p95_ms);
  }
  return out;
}

function summary() {
  const line = (r) =>
    `${`${r.dataset}${r.filter ? ` ${r.filter.part}` : ''}`.padEnd(10)}${r.index.padEnd(8)}${String(r.chunks).padStart(8)}` +
    `  ${`${r.semantic_limit_50.p50_ms} / ${r.semantic_limit_50.p95_ms}`.padEnd(15)}` +
    `${`${r.hybrid.p50_ms} / ${r.hybrid.p95_ms}`.padEnd(15)}${`${r.keyword.p50_ms} / ${r.keyword.p95_ms}`.padEnd(15)}` +
    `${r.recall_at_50.toFixed(3)}     ${r.recall_at_10.toFixed(3)}`;
  const header = `dataset   index     chunks  semantic@50 ms hybrid ms      keyword ms     recall@50 recall@10`;
  const each = (q) => MODES.map(([mode]) => `${mode} ${q[`${mode}_p50`]} / ${q[`${mode}_p95`]}`).join(', ');
  console.log(
    `\nquery embedding, ${QUERY_MODEL} (add to the latencies): p50 ${result.query_embedding.p50_ms} ms, p95 ${result.query_embedding.p95_ms} ms`,
  );
  if (result.a) summaryAC(line, header, each);
  if (result.b) {
    const t = result.b.index_trial;
    console.log(
      `\n(b) ${result.b.chunks} chunks, ${result.b.datasets} datasets: loaded at ${result.b.load.million.chunks_per_second} chunks/s; HNSW build ${Object.values(result.b.load.million.hnsw_build_seconds)[0]} s (predicted ${t.predicted_seconds} s from ${t.builds.map((x) => `${x.chunks}: ${x.seconds} s`).join(', ')})\n${header}`,
    );
    for (const r of result.b.rows) console.log(line(r));
    console.log(
      `hybrid p95 / 136k's by class (target <= 2): ${JSON.stringify(result.b.hybrid_p95_over_136k)}`,
    );
  }
  if (result.d) {
    const load = result.d.load;
    console.log(
      `\n(d) ${result.d.chunks} chunks, ${result.d.datasets} datasets: loaded at ${load.postgres.chunks_per_second} chunks/s in one PostgreSQL, ${load.citus.chunks_per_second} on Citus (${result.d.load_throughput_citus_over_postgres}x)\n${header}`,
    );
    for (const r of result.d.rows) console.log(line(r));
    for (const [label, q] of Object.entries(result.d.citus_over_postgres))
      console.log(`${label} Citus / one PostgreSQL, p50 / p95: ${each(q)}`);
    const { postgres, citus, throughput_citus_over_postgres } = result.d.ingest;
    console.log(
      `pipeline: ${postgres.documents_per_second} documents/s in one PostgreSQL, ${citus.documents_per_second} on Citus (${throughput_citus_over_postgres}x)`,
    );
  }
  console.log(`\ntargets (issue 35):`);
  for (const [name, checks] of Object.entries(result.targets)) {
    for (const check of checks)
      console.log(`  ${check.met ? 'met    ' : 'NOT met'} ${name}: ${check.case} ${check.measured}`);
  }
  console.log(
    `load average: ${result.machine.load.map((l) => `${l.at} (${l.seconds} s) ${l.load_average}`).join('; ')}`,
  );
}

/** The summary of (a) and (c), and of the cost model. */
function summaryAC(line, header, each) {
  console.log(`\n(a) ${result.a.chunks} chunks, ${result.a.datasets} datasets; p50 / p95\n${header}`);
  for (const r of result.a.rows) console.log(line(r));
  for (const r of result.a.shared_over_alone)
    console.log(
      `${r.dataset} shared / alone, p50 / p95: ${each(r)}; recall@50 ${r.recall_at_50_difference >= 0 ? '+' : ''}${r.recall_at_50_difference} ± ${r.recall_at_50_difference_standard_error} (targets: <= 1.2, >= 0)`,
    );
  console.log(`\n(c) filters on the 60k dataset; p50 / p95\n${header}`);
  for (const r of [...result.c.unfiltered, ...result.c.rows]) console.log(line(r));
  for (const r of result.c.rows) {
    console.log(
      `${r.index} ${r.filter.part} (${r.passing_chunks} chunks) / unfiltered, p50 / p95: ${each(r.filtered_over_unfiltered)} (target <= 1.5)`,
    );
  }
  console.log(`\ncost model (scansExactly) against the leg's statement, p50 ms at ${K} candidates`);
  for (const m of result.cost_model) {
    console.log(
      `  ${`${m.dataset}${m.part ? ` ${m.part}` : ''}`.padEnd(10)} ${String(m.chunks).padStart(6)} of ${String(m.indexed).padStart(6)}: exact ${m.exact_p50_ms}, walk ${m.walk_p50_ms} (found ${m.walk_found_mean}); ${m.scan_us_per_row} us a row, walk = ${m.walk_rows_per_candidate} rows a candidate; model: ${m.model_scans_exactly ? 'exact' : 'walk'}, faster: ${m.faster}`,
    );
  }
}

/**
 * The issue's targets, each case met or not: a dataset sharing the index within 1.2x of its latency
 * alone (p50 and p95, semantic and hybrid) with recall not below (by more than twice the paired
 * difference's standard error: the two HNSW graphs are built apart); filtered queries within 1.5x of
 * unfiltered (the same), their recall beside (the target asks >= 0.95 where the service scans exactly,
 * which is not seen from outside); at a million chunks, hybrid p95 within 2x of the 136k figure of
 * the size class in the same run.
 */
function targets() {
  const worst = (ratios) =>
    Math.max(...['semantic', 'hybrid'].flatMap((m) => [ratios[`${m}_p50`], ratios[`${m}_p95`]]));
  const out = {};
  if (!result.a) return out;
  Object.assign(out, {
    shared_within_1_2x_of_alone: result.a.shared_over_alone.map((r) => ({
      case: r.dataset,
      measured: `worst ratio ${worst(r)}, recall@50 difference ${r.recall_at_50_difference} ± ${r.recall_at_50_difference_standard_error}`,
      // Not below: not below zero by more than twice its standard error.
      met: worst(r) <= 1.2 && r.recall_at_50_difference >= -2 * r.recall_at_50_difference_standard_error,
    })),
    filtered_within_1_5x_of_unfiltered: result.c.rows.map((r) => {
      const unfiltered = result.c.unfiltered.find((u) => u.index === r.index).recall_at_50;
      return {
        case: `${r.index} ${r.filter.part}`,
        measured: `worst ratio ${worst(r.filtered_over_unfiltered)}, recall@50 ${r.recall_at_50} (unfiltered ${unfiltered})`,
        met: worst(r.filtered_over_unfiltered) <= 1.5,
      };
    }),
  });
  if (result.b) {
    out.million_hybrid_p95_within_2x = Object.entries(result.b.hybrid_p95_over_136k).map(([name, ratio]) => ({
      case: name,
      measured: `ratio ${ratio}`,
      met: ratio <= 2,
    }));
  }
  return out;
}

function inClass(chunks, min, max) {
  return chunks > min && chunks <= max;
}

/** A case's mean recall@50. */
function recall(c) {
  return round3(mean(c.recall50));
}

function sum(xs) {
  return xs.reduce((s, x) => s + x, 0);
}

function mean(xs) {
  return sum(xs) / xs.length;
}

function round2(x) {
  return Math.round(x * 100) / 100;
}

function round3(x) {
  return Math.round(x * 1000) / 1000;
}
