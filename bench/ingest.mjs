// npm run bench:ingest — ingests BEIR SciFact (5,183 documents) through the HTTP API and reports
// documents/s, chunks/s and the server's peak RSS; then, in the same run, loads the same chunks (the
// same texts and vectors, with their postings) straight into a fresh database with bench:scale's SQL
// loader (bench/lib.mjs `loadDocuments`), and runs the same model over the same documents in a tight
// loop: what the API path costs against the least a load can cost, and against the model alone.
//
// Model: BENCH_MODEL in MODELS_DIR; by default the synthetic bge-small-shaped model (random weights,
// real cost; ../shared/models/README.md). A static model (Model2Vec, e.g. BENCH_MODEL=
// minishlab/potion-base-2M MODELS_DIR=../shared/models) runs its tight loop on the service's own encoder
// (dist/modules/embeddings/static-model.js); a transformer, on @huggingface/transformers as the service.
//
// Where the API path's time goes, measured while it runs:
// - each document's stages, from the progress the pipeline records (a trigger of this benchmark's own
//   database logs each change, with the time): queued, extraction, chunking, embedding, indexing;
// - what the database's sessions are doing, sampled every SAMPLE_MS from pg_stat_activity: the
//   statement, and the lock it waits for (the dataset's chunk lock is an advisory lock);
// - CPU seconds of the server's threads, of the database's sessions, of Redis and of this process.
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { env, pipeline } from '@huggingface/transformers';
import pg from 'pg';
import { chunkText } from '../dist/modules/embeddings/chunking/chunker.js';
import { isStaticModelDir, loadStaticModel } from '../dist/modules/embeddings/static-model.js';
import {
  apiKey,
  cpuSeconds,
  createDatabase,
  createIndexes,
  dropVectorIndexes,
  finishDatasets,
  insertDatasets,
  latencyStats,
  loadDocuments,
  machineCpuSeconds,
  bulkUpload,
  pool,
  poster,
  scifact,
  startServer,
  startWorkers,
  timedPoster,
  threadCpuSeconds,
  writeResult,
} from './lib.mjs';

const DEFAULT_MODEL = 'synthetic/bert-L12-H384';
const MODELS_DIR = resolve(process.env.MODELS_DIR ?? '.cache/models');
const MODEL = process.env.BENCH_MODEL ?? DEFAULT_MODEL;
const STATIC = isStaticModelDir(join(MODELS_DIR, MODEL));
const CORPUS = process.env.BENCH_CORPUS ?? '../shared/datasets/scifact/corpus.jsonl';
const LIMIT = Number(process.env.BENCH_DOCUMENTS ?? Infinity);
/** The service's defaults (src/modules/embeddings/embeddings.config.ts), unless set for both. */
const BATCH = Number(process.env.EMBEDDING_BATCH_SIZE ?? 16);
const CHUNK_TOKENS = Number(process.env.CHUNK_TOKENS ?? 512);
const CHUNK_OVERLAP_TOKENS = Number(process.env.CHUNK_OVERLAP_TOKENS ?? 32);
/** `bulk`: NDJSON requests of BULK.perRequest documents, BULK.clients at a time; `single`: one each. */
const UPLOAD = process.env.BENCH_UPLOAD ?? 'bulk';
const BULK = { perRequest: 500, clients: 2 };
const CLIENTS = UPLOAD === 'bulk' ? BULK.clients : 8;
/** BENCH_INGEST_EXTRA=0 leaves out the runs with worker processes and the searches during ingestion. */
const EXTRA = process.env.BENCH_INGEST_EXTRA !== '0';
/**
 * With BENCH_INGEST_ANALYZE_AT=n, the bench runs ANALYZE once n documents are ready, as autovacuum
 * does on a live database: a fresh one's sessions otherwise keep the plans they made while its tables
 * were empty (docs/benchmarks.md, Ingestion with potion-base-2M).
 */
const ANALYZE_AT = Number(process.env.BENCH_INGEST_ANALYZE_AT ?? 0);
/** How often pg_stat_activity is sampled during the API run. */
const SAMPLE_MS = 100;

const documents = readFileSync(CORPUS, 'utf8')
  .split('\n')
  .filter(Boolean)
  .slice(0, LIMIT)
  .map((line) => JSON.parse(line))
  .map((doc) => ({ content: `${doc.title}\n\n${doc.text}`, metadata: { source_id: doc._id } }));

const result = {
  model: MODEL,
  static_model: STATIC,
  documents: documents.length,
  clients: CLIENTS,
  analyze_at_documents: ANALYZE_AT || null,
  upload: UPLOAD,
  ...(UPLOAD === 'bulk' ? { documents_per_request: BULK.perRequest } : {}),
  embedding_batch_size: BATCH,
  chunk_tokens: CHUNK_TOKENS,
};
if (process.env.BENCH_INGEST_ONLY_EXTRA === '1') {
  // A check of the extra runs alone (e.g. with BENCH_DOCUMENTS=300): printed, not written.
  console.log(JSON.stringify({ workers: await workersRun(1), search: await searchDuringIngestion() }, null, 1));
  process.exit(0);
}
const loaded = await apiRun();
result.sql = await sqlRun(loaded);
result.sql_over_api_chunks_per_second = round(result.sql.chunks_per_second / result.chunks_per_second);
// As bench:scale loads: the HNSW indexes dropped, built once after the load (its time counted).
result.sql_hnsw_built_after = await sqlRun(loaded, { buildAfter: true });
result.raw_model = await rawModel(loaded.chunks.map((chunk) => chunk.content));
result.pipeline_to_raw_ratio = round(result.chunks_per_second / result.raw_model.chunks_per_second);
// The target is for a transformer, whose runs are most of the work; a static model's are not (above).
if (!STATIC) result.target_ratio = 0.8;
if (EXTRA) {
  result.worker_processes = {};
  for (const count of [1, 2]) result.worker_processes[count] = await workersRun(count);
  result.worker_processes.two_over_one = round(
    result.worker_processes[2].chunks_per_second / result.worker_processes[1].chunks_per_second,
  );
  result.search_during_ingestion = await searchDuringIngestion();
}
result.measured_at = new Date().toISOString();
summary();

/**
 * The documents through the API, with the measurements of where the time goes; returns the chunks
 * written (text, vector, document) and the dataset's embedding model and dimensions.
 */
async function apiRun() {
  const database = await createDatabase();
  const db = new pg.Pool({ connectionString: database.url, max: 2 });
  await traceStages(db);
  const server = await startServer(serviceEnv(database, `bench_${process.pid}`));
  const key = apiKey(database.url).api_key;
  const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
  const post = poster(server.url, headers);
  try {
    const dataset = await post('/v1/datasets', { name: 'scifact' });
    console.log(`ingesting ${documents.length} documents with ${MODEL} ...`);
    const sampler = await startSampler(database.url, server.pid, dataset.id);
    const analysis = ANALYZE_AT > 0 ? analyzeAt(db, ANALYZE_AT) : null;
    const started = performance.now();
    let uploadMs = [];
    if (UPLOAD === 'bulk') {
      const bulk = await bulkUpload(server.url, key, dataset.id, documents, BULK);
      if (bulk.refused.length > 0) throw new Error(`refused: ${JSON.stringify(bulk.refused[0])}`);
      uploadMs = bulk.requestMs;
    } else {
      await pool(documents, CLIENTS, async (doc) => {
        const t = performance.now();
        await post(`/v1/datasets/${dataset.id}/documents`, doc);
        uploadMs.push(performance.now() - t);
      });
    }
    const uploaded = performance.now();
    sampler.mark('uploaded');
    for (;;) {
      const { rows } = await db.query(
        `SELECT count(*) FILTER (WHERE status = 'processing')::int AS processing,
                count(*) FILTER (WHERE status = 'failed')::int AS failed FROM documents`,
      );
      if (rows[0].processing === 0) {
        result.failed = rows[0].failed;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const finished = performance.now();
    if (analysis) result.analyzed_at_seconds = round(((await analysis.stop()) - started) / 1000);
    const samples = await sampler.stop();
    const { rows: chunks } = await db.query(
      `SELECT c.document_id, c.content, c.embedding::text AS embedding, d.metadata
         FROM chunks c JOIN documents d ON d.id = c.document_id
        ORDER BY d.created_at, d.id, c.ordinal`,
    );
    const {
      rows: [{ postings }],
    } = await db.query('SELECT count(*)::int AS postings FROM chunk_terms');
    result.postings = postings;
    const {
      rows: [index],
    } = await db.query(
      `SELECT embedding_model AS model, embedding_dimensions AS dimensions FROM dataset_index`,
    );
    const { rows: vectorIndexes } = await db.query(
      `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
        WHERE tablename = 'chunks' AND indexdef LIKE '% USING hnsw %'`,
    );
    const peakRss = server.peakRssMiB();
    await server.stop();
    const tables = await tableScans(database.url);
    const seconds = (finished - started) / 1000;
    Object.assign(result, {
      chunks: chunks.length,
      upload_seconds: round((uploaded - started) / 1000),
      total_seconds: round(seconds),
      documents_per_second: round(documents.length / seconds),
      chunks_per_second: round(chunks.length / seconds),
      server_peak_rss_mib: round(peakRss),
      upload_latency: latencyStats(uploadMs),
      breakdown: {
        stages: await stageBreakdown(db, seconds),
        sessions: samples.sessions,
        cpu_seconds: samples.cpu,
        tables,
      },
    });
    return { chunks, index, vectorIndexes };
  } finally {
    await server.stop();
    await db.end();
    await database.drop();
  }
}

/** The service's environment in the bench's runs: the model, the bench's concurrency, no rate limit. */
function serviceEnv(database, prefix) {
  return {
    DATABASE_URL: database.url,
    REDIS_PREFIX: prefix,
    EMBEDDING_PROVIDER: 'local',
    EMBEDDING_MODEL: MODEL,
    MODELS_DIR,
    INGEST_CONCURRENCY: process.env.INGEST_CONCURRENCY ?? '32',
    RATE_LIMIT_API_KEY: '10000000',
  };
}

/** Resolves once no document of the database is processing; the failed count. */
async function processed(db) {
  for (;;) {
    const { rows } = await db.query(
      `SELECT count(*) FILTER (WHERE status = 'processing')::int AS processing,
              count(*) FILTER (WHERE status = 'failed')::int AS failed FROM documents`,
    );
    if (rows[0].processing === 0) return rows[0].failed;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * A fresh database, a `ROLE=api` server and `workers` worker processes (`ROLE=worker`), each with
 * the bench's INGEST_CONCURRENCY; `run({ server, key, db })` is run against them, and everything is
 * stopped and dropped after.
 */
async function withDeployment(workers, run) {
  const database = await createDatabase();
  const db = new pg.Pool({ connectionString: database.url, max: 2 });
  const env = serviceEnv(database, `bench_${process.pid}_${workers}`);
  const server = await startServer({ ...env, ROLE: 'api' });
  const started = await startWorkers(env, workers);
  try {
    const key = apiKey(database.url).api_key;
    return await run({ server, key, db });
  } finally {
    await started.stop();
    await server.stop();
    await db.end();
    await database.drop();
  }
}

/** SciFact through the bulk route into a fresh deployment of `workers` worker processes. */
function workersRun(workers) {
  console.log(`ingesting with ${workers} worker process(es) ...`);
  return withDeployment(workers, async ({ server, key, db }) => {
    const post = poster(server.url, { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' });
    const dataset = await post('/v1/datasets', { name: 'scifact' });
    const started = performance.now();
    await bulkUpload(server.url, key, dataset.id, documents, BULK);
    const uploaded = performance.now();
    const failed = await processed(db);
    const seconds = (performance.now() - started) / 1000;
    const { rows } = await db.query('SELECT count(*)::int AS chunks FROM chunks');
    return {
      workers,
      failed,
      chunks: rows[0].chunks,
      upload_seconds: round((uploaded - started) / 1000),
      total_seconds: round(seconds),
      documents_per_second: round(documents.length / seconds),
      chunks_per_second: round(rows[0].chunks / seconds),
    };
  });
}

/**
 * Hybrid searches of SciFact's queries, one at a time, on a dataset holding SciFact: idle, then while
 * SciFact is ingested through the bulk route into another dataset, then into the searched one itself
 * (a second copy of each document); latencies and their ratios to idle. A `ROLE=api` server and one
 * worker process, as a deployment that searches while it ingests would run.
 */
function searchDuringIngestion() {
  console.log('searching while ingesting ...');
  const queries = [...scifact().queries.values()].slice(0, 300);
  return withDeployment(1, async ({ server, key, db }) => {
    const headers = { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' };
    const post = poster(server.url, headers);
    const searched = await post('/v1/datasets', { name: 'searched' });
    const other = await post('/v1/datasets', { name: 'other' });
    await bulkUpload(server.url, key, searched.id, documents, BULK);
    await processed(db);
    const search = timedPoster(server.url, headers);
    const ask = async (query) => {
      const started = performance.now();
      const { status, json } = await search('/v1/mcp/query', { dataset_id: searched.id, query });
      if (status !== 200) throw new Error(`search: ${status} ${JSON.stringify(json)}`);
      return performance.now() - started;
    };
    // Warm-up, then idle: every query once.
    for (const query of queries.slice(0, 20)) await ask(query);
    const idle = [];
    for (const query of queries) idle.push(await ask(query));
    /** Queries in turn, for as long as `load` runs; its seconds and the latencies. */
    const during = async (load) => {
      const ms = [];
      let done = false;
      const started = performance.now();
      const loading = load().finally(() => (done = true));
      for (let i = 0; !done; i++) ms.push(await ask(queries[i % queries.length]));
      await loading;
      return {
        seconds: round((performance.now() - started) / 1000),
        queries: ms.length,
        ...latencyStats(ms),
      };
    };
    const ingest = (datasetId, copy) => async () => {
      const copies = documents.map((doc) => ({ ...doc, metadata: { ...doc.metadata, copy } }));
      await bulkUpload(server.url, key, datasetId, copies, BULK);
      await processed(db);
    };
    const idleStats = latencyStats(idle);
    const ratios = (stats) => ({
      ...stats,
      p50_over_idle: round(stats.p50_ms / idleStats.p50_ms),
      p95_over_idle: round(stats.p95_ms / idleStats.p95_ms),
    });
    return {
      queries: queries.length,
      idle: idleStats,
      into_another_dataset: ratios(await during(ingest(other.id, 1))),
      into_the_searched_dataset: ratios(await during(ingest(searched.id, 2))),
    };
  });
}

/**
 * Runs ANALYZE on the database once `count` documents are ready (looked at every 200 ms); `stop()`
 * ends the watch and resolves with the time it ran (performance.now()), or null.
 */
function analyzeAt(db, count) {
  let running = true;
  let at = null;
  const watch = (async () => {
    while (running && at === null) {
      const { rows } = await db.query(`SELECT count(*)::int AS n FROM documents WHERE status = 'ready'`);
      if (rows[0].n >= count) {
        await db.query('ANALYZE');
        at = performance.now();
        console.log(`ANALYZE after ${rows[0].n} documents ready`);
      } else await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  watch.catch(() => undefined); // awaited, and so thrown, by stop()
  return {
    async stop() {
      running = false;
      await watch;
      return at;
    },
  };
}

/**
 * A trigger that logs every change of a document's progress with the clock's time: the start of each
 * of its stages (extraction, chunking, embedding, indexing; docs/ingestion.md). An unlogged table,
 * one row per stage: a few hundred microseconds a document, beside the writes it rides on.
 */
async function traceStages(db) {
  if (process.env.PROBE_EXPLAIN_MS) {
    const [{ name }] = (await db.query('SELECT current_database() AS name')).rows;
    await db.query(`ALTER DATABASE ${name} SET session_preload_libraries = 'auto_explain'`);
    await db.query(
      `ALTER DATABASE ${name} SET auto_explain.log_min_duration = '${process.env.PROBE_EXPLAIN_MS}ms'`,
    );
    await db.query(`ALTER DATABASE ${name} SET auto_explain.log_analyze = on`);
    await db.query(`ALTER DATABASE ${name} SET auto_explain.log_buffers = on`);
    await db.query(`ALTER DATABASE ${name} SET auto_explain.log_triggers = on`);
    console.log(`auto_explain on ${name}`);
  }
  await db.query(`
    CREATE UNLOGGED TABLE bench_stages (document_id text NOT NULL, stage text NOT NULL,
                                        at timestamptz NOT NULL DEFAULT clock_timestamp());
    CREATE FUNCTION bench_stage() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.progress IS NOT NULL AND NEW.progress IS DISTINCT FROM OLD.progress THEN
        INSERT INTO bench_stages (document_id, stage) VALUES (NEW.id, NEW.progress->>'stage');
      END IF;
      RETURN NULL;
    END $$;
    CREATE TRIGGER bench_stage AFTER UPDATE ON documents FOR EACH ROW EXECUTE FUNCTION bench_stage();`);
}

/**
 * Each stage's seconds summed over the documents, and that sum over the run's wall time: how many
 * documents were in the stage at once on average. A stage runs from its start to the next's; queued
 * runs from the upload's commit to the job's first progress, indexing to the document's `processed_at`
 * (its chunks written, under the dataset's chunk lock, the commit just after). Also when documents
 * became ready: how many while uploads still came in.
 */
async function stageBreakdown(db, wallSeconds) {
  const { rows } = await db.query(`
    WITH s AS (
      SELECT d.id, d.created_at, d.processed_at,
             max(b.at) FILTER (WHERE b.stage = 'extraction') AS extraction,
             max(b.at) FILTER (WHERE b.stage = 'chunking') AS chunking,
             max(b.at) FILTER (WHERE b.stage = 'embedding') AS embedding,
             max(b.at) FILTER (WHERE b.stage = 'indexing') AS indexing
        FROM documents d JOIN bench_stages b ON b.document_id = d.id
       WHERE d.status = 'ready'
       GROUP BY d.id
    ), d AS (
      SELECT extract(epoch FROM extraction - created_at) AS queued,
             extract(epoch FROM chunking - extraction) AS extraction,
             extract(epoch FROM embedding - chunking) AS chunking,
             extract(epoch FROM indexing - embedding) AS embedding,
             extract(epoch FROM processed_at - indexing) AS indexing,
             extract(epoch FROM processed_at - created_at) AS total
        FROM s
    )
    SELECT stage, sum(seconds)::float8 AS seconds, avg(seconds)::float8 AS mean,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds)::float8 AS p50,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY seconds)::float8 AS p95
      FROM d, LATERAL (VALUES ('queued', queued), ('extraction', extraction), ('chunking', chunking),
                              ('embedding', embedding), ('indexing', indexing), ('total', total)) v(stage, seconds)
     GROUP BY stage`);
  const {
    rows: [timeline],
  } = await db.query(`
    SELECT extract(epoch FROM max(created_at) - min(created_at))::float8 AS upload_seconds,
           extract(epoch FROM max(processed_at) - min(created_at))::float8 AS ready_seconds,
           count(*) FILTER (WHERE processed_at <= (SELECT max(created_at) FROM documents))::int
             AS ready_during_upload,
           count(*)::int AS ready
      FROM documents WHERE status = 'ready'`);
  const order = ['queued', 'extraction', 'chunking', 'embedding', 'indexing', 'total'];
  const stages = Object.fromEntries(
    order.map((stage) => {
      const row = rows.find((r) => r.stage === stage);
      return [
        stage,
        {
          document_seconds: round(row.seconds),
          mean_ms: round(row.mean * 1000),
          p50_ms: round(row.p50 * 1000),
          p95_ms: round(row.p95 * 1000),
          in_stage_at_once: round(row.seconds / wallSeconds),
        },
      ];
    }),
  );
  return {
    stages,
    timeline: {
      upload_seconds: round(timeline.upload_seconds),
      ready_seconds: round(timeline.ready_seconds),
      ready_during_upload: timeline.ready_during_upload,
      ready_per_second_during_upload: round(timeline.ready_during_upload / timeline.upload_seconds),
      ready_per_second_after_upload: round(
        (timeline.ready - timeline.ready_during_upload) / (timeline.ready_seconds - timeline.upload_seconds),
      ),
    },
  };
}

/**
 * Samples, until `stop()`: every SAMPLE_MS, what each session of the database is doing (pg_stat_activity:
 * its state, the lock it waits for, its statement); every second, the CPU seconds of the database's
 * sessions (each seen one's, read while it lives). `mark(name)` notes a point (CPU of the server's
 * threads, the sessions', Redis's, this process's, the machine's), reported as the CPU between marks.
 */
async function startSampler(url, serverPid, datasetId) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const {
    rows: [{ key: lockKey }],
  } = await client.query(`SELECT hashtextextended('dataset chunks ' || $1, 0)::text AS key`, [datasetId]);
  const counts = new Map();
  /** What the session holding the chunk lock was doing, by sample. */
  const holder = new Map();
  let samples = 0;
  let lockHeld = 0;
  let lockWaiting = 0;
  const backends = new Map(); // pid → { type, first, last } CPU seconds
  const redisPid = processNamed('redis-server');
  const marks = [];
  const readBackends = async () => {
    const { rows } = await client.query(
      `SELECT pid, backend_type AS type FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid()`,
    );
    for (const { pid, type } of rows) {
      const seconds = cpuSeconds(pid);
      if (seconds === null) continue;
      const seen = backends.get(pid);
      if (seen) seen.last = seconds;
      else backends.set(pid, { type, first: marks.length === 0 ? seconds : 0, last: seconds });
    }
  };
  const mark = (name) =>
    marks.push({
      name,
      at: performance.now(),
      threads: threadCpuSeconds(serverPid),
      // By backend type: the clients' sessions, and autovacuum's workers on this database.
      backends: [...backends.values()].reduce(
        (sums, b) => ({ ...sums, [b.type]: (sums[b.type] ?? 0) + b.last - b.first }),
        {},
      ),
      redis: redisPid ? cpuSeconds(redisPid) : null,
      bench: process.cpuUsage(),
      machine: machineCpuSeconds(),
    });
  await readBackends();
  mark('started');
  let running = true;
  let lastCpu = performance.now();
  const loop = (async () => {
    while (running) {
      // The dataset's chunk lock (`ChunkIndexRepository.lockDataset`): an advisory lock on a bigint,
      // which pg_locks shows as its high and low 32 bits.
      const { rows } = await client.query(
        `SELECT a.state, a.wait_event_type, a.wait_event, a.backend_type, l.granted AS chunk_lock,
                regexp_replace(left(a.query, 300), '\\s+', ' ', 'g') AS query
           FROM pg_stat_activity a
           LEFT JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory' AND l.objsubid = 1
                AND l.classid::bigint = ($1::bigint >> 32) & 4294967295 AND l.objid::bigint = $1::bigint & 4294967295
          WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()`,
        [lockKey],
      );
      samples++;
      let held = false;
      let waiting = 0;
      for (const row of rows) {
        if (row.state === 'idle') continue;
        const wait = row.wait_event_type ? ` [${row.wait_event_type}: ${row.wait_event}]` : '';
        const key = `${row.state}${wait}: ${statementOf(row)}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
        if (row.chunk_lock === false) waiting++;
        if (row.chunk_lock === true) {
          held = true;
          holder.set(key, (holder.get(key) ?? 0) + 1);
        }
      }
      if (held) lockHeld++;
      lockWaiting += waiting;
      if (performance.now() - lastCpu >= 1000) {
        await readBackends();
        lastCpu = performance.now();
      }
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
    }
  })();
  loop.catch(() => undefined); // awaited, and so thrown, by stop()
  return {
    mark,
    async stop() {
      running = false;
      await loop;
      await readBackends();
      mark('processed');
      await client.end();
      const sessions = {
        samples,
        every_ms: SAMPLE_MS,
        // Of the samples, the share in which a session was inside an indexing transaction past the
        // chunk lock (the lock is the dataset's: one such transaction at a time).
        chunk_lock_held_share: round(lockHeld / samples),
        // What the holder was doing, as a share of all samples: a statement running ('active'), or
        // its transaction waiting for the service's next statement ('idle in transaction').
        chunk_lock_holder: shares(holder, samples),
        sessions_waiting_for_chunk_lock_mean: round(lockWaiting / samples),
        // Sessions doing each thing, on average over the samples (idle ones left out).
        mean_sessions: shares(counts, samples),
      };
      return { sessions, cpu: cpuBetween(marks) };
    },
  };
}

/** What a session's statement is, by its text (the service's statements, as they begin). */
function statementOf({ query, backend_type: type }) {
  if (type !== 'client backend') return type;
  const kinds = [
    [/pg_advisory_xact_lock\(hashtextextended\('dataset chunks/, 'dataset chunk lock'],
    [/^SET LOCAL jit/, 'index transaction start'],
    [/^SELECT seq, language::text AS language, account_id/, 'index target (dataset row)'],
    [/^SELECT 1 FROM documents WHERE .* FOR UPDATE/, 'lock run (document row)'],
    [/^SELECT embedding_model AS "embeddingModel"/, 'index state'],
    [/^WITH gone AS \( SELECT p\.dataset_seq/, 'delete old postings'],
    [/^WITH gone AS \(DELETE FROM chunks/, 'delete old chunks'],
    [/^WITH input AS/, 'insert chunks, postings, term_stats'],
    [/^UPDATE dataset_index SET chunk_count/, 'dataset totals'],
    [/^UPDATE documents SET status = 'ready'/, 'mark ready'],
    [/^INSERT INTO events/, 'event outbox'],
    [/^COMMIT/, 'commit'],
    [/^UPDATE documents SET progress/, 'progress (heartbeat)'],
    [/^SELECT d\.id, d\.dataset_id AS "datasetId", d\.kind/, 'load run'],
    [/^INSERT INTO "documents"|^INSERT INTO "document_sources"/, 'upload: insert document'],
    [/^SELECT .*FROM "datasets" .*FOR NO KEY UPDATE|FOR UPDATE/, 'upload: dataset row lock'],
    [/^UPDATE datasets SET document_count/, 'upload: document count'],
    [/^SELECT .* FROM "documents"/, 'upload: read document back'],
    [/^START TRANSACTION|^BEGIN/, 'begin'],
  ];
  return kinds.find(([pattern]) => pattern.test(query))?.[1] ?? query.slice(0, 60);
}

/** Counts by key over `samples`, largest first, those of half a percent or more. */
function shares(counts, samples) {
  return Object.fromEntries(
    [...counts]
      .sort((a, b) => b[1] - a[1])
      .filter(([, n]) => n / samples >= 0.005)
      .map(([key, n]) => [key, Math.round((n / samples) * 1000) / 1000]),
  );
}

/** CPU seconds between consecutive marks: the server's threads by name, the sessions, Redis, this process. */
function cpuBetween(marks) {
  const out = {};
  for (let i = 1; i < marks.length; i++) {
    const [a, b] = [marks[i - 1], marks[i]];
    const wall = (b.at - a.at) / 1000;
    const threads = {};
    for (const [tid, { name, seconds }] of b.threads) {
      // Worker threads are told apart by id: the model's, the extraction threads'.
      const key = name === 'WorkerThread' ? `WorkerThread ${tid}` : name;
      threads[key] = (threads[key] ?? 0) + seconds - (a.threads.get(tid)?.seconds ?? 0);
    }
    const cpu = (x) => (x.user + x.system) / 1e6;
    const sessions = Object.entries(b.backends).reduce((sum, [t, x]) => sum + x - (a.backends[t] ?? 0), 0);
    const ours =
      Object.values(threads).reduce((x, y) => x + y, 0) +
      sessions +
      (a.redis === null ? 0 : b.redis - a.redis) +
      cpu(b.bench) -
      cpu(a.bench);
    out[`${a.name} → ${b.name}`] = {
      wall_seconds: round(wall),
      server_threads: Object.fromEntries(
        Object.entries(threads)
          .filter(([, s]) => s >= 0.05)
          .sort((x, y) => y[1] - x[1])
          .map(([name, s]) => [name, round(s)]),
      ),
      server: round(Object.values(threads).reduce((x, y) => x + y, 0)),
      database_sessions: Object.fromEntries(
        Object.entries(b.backends).map(([type, seconds]) => [type, round(seconds - (a.backends[type] ?? 0))]),
      ),
      redis_shared: a.redis === null ? null : round(b.redis - a.redis),
      bench_client: round(cpu(b.bench) - cpu(a.bench)),
      machine_busy: round(b.machine.busy - a.machine.busy),
      machine_capacity: round(b.machine.total - a.machine.total),
      // What the rest of the machine used meanwhile (PostgreSQL's shared processes, other jobs).
      machine_other: round(b.machine.busy - a.machine.busy - ours),
    };
  }
  return out;
}

/** The pid of the first process whose command is `name`, or null. */
function processNamed(name) {
  for (const pid of readdirSyncSafe('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === name) return Number(pid);
    } catch {
      // gone meanwhile
    }
  }
  return null;
}

function readdirSyncSafe(dir) {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/**
 * How the index's tables were read meanwhile (pg_stat_user_tables): sequential scans and the rows they
 * read, index scans, and autovacuum's ANALYZE runs, which give the planner the tables' sizes. Read
 * once the sessions that wrote have ended, which is when they report their last figures.
 */
async function tableScans(url) {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const { rows } = await db.query(
    `SELECT relname, seq_scan::float8, seq_tup_read::float8, idx_scan::float8, n_live_tup::float8,
            n_dead_tup::float8, autoanalyze_count::int, autovacuum_count::int
       FROM pg_stat_user_tables WHERE relname IN ('chunks', 'chunk_terms', 'term_stats', 'documents')
      ORDER BY relname`,
  );
  await db.end();
  return Object.fromEntries(rows.map(({ relname, ...row }) => [relname, row]));
}

/**
 * The same chunks (texts, vectors) into a fresh database by `loadDocuments`, with the vector indexes
 * the API's database had (the migrations' and the one the server made for its model's dimensions),
 * so both paths keep the same indexes up to date; then `finishDatasets` (counts, term statistics).
 */
async function sqlRun({ chunks, index, vectorIndexes }, { buildAfter = false } = {}) {
  const database = await createDatabase();
  const db = new pg.Pool({ connectionString: database.url, max: 2 });
  try {
    const { rows: present } = await db.query(
      `SELECT indexname AS name FROM pg_indexes WHERE tablename = 'chunks' AND indexdef LIKE '% USING hnsw %'`,
    );
    for (const { name, definition } of vectorIndexes) {
      if (!present.some((p) => p.name === name)) await db.query(definition);
    }
    const key = apiKey(database.url);
    const datasetId = 'ds_bench00000000000000000';
    const [seq] = await insertDatasets(db, key.account_id, [{ id: datasetId, name: 'scifact' }], index);
    const byDocument = new Map();
    for (const [i, chunk] of chunks.entries()) {
      if (!byDocument.has(chunk.document_id)) {
        byDocument.set(chunk.document_id, {
          id: chunk.document_id,
          datasetId,
          datasetSeq: seq,
          metadata: chunk.metadata,
          chunks: [],
        });
      }
      byDocument.get(chunk.document_id).chunks.push({
        id: `chk_${String(i).padStart(22, '0')}`,
        text: chunk.content,
        vector: JSON.parse(chunk.embedding),
      });
    }
    const dropped = buildAfter ? await dropVectorIndexes(db) : [];
    const started = performance.now();
    const written = await loadDocuments(db, byDocument.values());
    await finishDatasets(db);
    const build = buildAfter ? await createIndexes(db, dropped) : null;
    const seconds = (performance.now() - started) / 1000;
    await db.end();
    return {
      ...(build ? { hnsw_build_seconds: build.seconds } : {}),
      tables: await tableScans(database.url),
      chunks: written,
      documents: byDocument.size,
      seconds: round(seconds),
      chunks_per_second: round(written / seconds),
      documents_per_second: round(byDocument.size / seconds),
      vector_indexes: vectorIndexes.map((i) => i.name),
    };
  } finally {
    if (!db.ended) await db.end();
    await database.drop();
  }
}

/**
 * The model alone, in this process, over the same documents: chunking them by its tokenizer as the
 * pipeline does (chunkText, the service's chunker), then embedding the chunks the API run wrote in a
 * tight loop, in batches of EMBEDDING_BATCH_SIZE. A static model on the service's own encoder.
 */
async function rawModel(chunkTexts) {
  let encode;
  let count;
  let maxTokens;
  let dispose = async () => undefined;
  if (STATIC) {
    const model = loadStaticModel(join(MODELS_DIR, MODEL));
    encode = async (texts) => model.embed(texts);
    count = model.countTokens;
    maxTokens = model.maxTokens;
  } else {
    env.localModelPath = MODELS_DIR;
    env.allowRemoteModels = false;
    const extractor = await pipeline('feature-extraction', MODEL, { dtype: 'q8' });
    encode = (texts) => extractor(texts, { pooling: 'cls', normalize: true });
    count = (text) => extractor.tokenizer.encode(text).length;
    maxTokens = extractor.model.config.max_position_embeddings ?? 512;
    dispose = () => extractor.dispose();
  }
  try {
    const options = { maxTokens: Math.min(CHUNK_TOKENS, maxTokens - 2), overlapTokens: CHUNK_OVERLAP_TOKENS };
    let chunked = 0;
    const chunkStarted = performance.now();
    for (const doc of documents) {
      chunked += chunkText({ format: 'prose', sections: [{ text: doc.content }] }, { count }, options).length;
    }
    const chunkSeconds = (performance.now() - chunkStarted) / 1000;
    await encode(chunkTexts.slice(0, BATCH));
    const started = performance.now();
    for (let i = 0; i < chunkTexts.length; i += BATCH) await encode(chunkTexts.slice(i, i + BATCH));
    const seconds = (performance.now() - started) / 1000;
    return {
      chunking_seconds: round(chunkSeconds),
      chunks_from_chunking: chunked,
      embedding_seconds: round(seconds),
      chunks_per_second: round(chunkTexts.length / seconds),
      // The model's whole share of the API run's work: chunking and embedding, one thread.
      share_of_api_wall_time: round((chunkSeconds + seconds) / result.total_seconds),
    };
  } finally {
    await dispose();
  }
}

function summary() {
  const { stages, timeline } = result.breakdown.stages;
  const cpu = Object.entries(result.breakdown.cpu_seconds);
  console.log(`
model                 ${MODEL}${STATIC ? ' (static)' : ''}
documents/s           ${result.documents_per_second}   (${result.documents} documents, ${result.failed} failed, ${result.total_seconds} s; uploads done at ${result.upload_seconds} s)
chunks/s              ${result.chunks_per_second}   (${result.chunks} chunks, ${result.postings} postings)
server peak RSS       ${result.server_peak_rss_mib} MiB
upload latency        p50 ${result.upload_latency.p50_ms} ms  p95 ${result.upload_latency.p95_ms} ms (${UPLOAD === 'bulk' ? `requests of ${BULK.perRequest} documents, ` : ''}${CLIENTS} clients)
SQL loader chunks/s   ${result.sql.chunks_per_second}   (same ${result.sql.chunks} chunks and vectors, ${result.sql.seconds} s)
SQL / API chunks/s    ${result.sql_over_api_chunks_per_second}
SQL, HNSW after       ${result.sql_hnsw_built_after.chunks_per_second} chunks/s (the build included: ${JSON.stringify(result.sql_hnsw_built_after.hnsw_build_seconds)} s)
raw model chunks/s    ${result.raw_model.chunks_per_second}   (same chunks, batches of ${BATCH}; chunking the documents ${result.raw_model.chunking_seconds} s)
pipeline / raw        ${result.pipeline_to_raw_ratio}${result.target_ratio ? `   (target >= ${result.target_ratio})` : ''}
model's share of wall ${result.raw_model.share_of_api_wall_time}
stages (document-seconds; mean ms; documents in the stage at once):
${Object.entries(stages)
  .map(
    ([s, v]) =>
      `  ${s.padEnd(11)} ${v.document_seconds} s; mean ${v.mean_ms} ms, p95 ${v.p95_ms} ms; ${v.in_stage_at_once}`,
  )
  .join('\n')}
ready during uploads  ${timeline.ready_during_upload} (${timeline.ready_per_second_during_upload}/s), after: ${timeline.ready_per_second_after_upload}/s
chunk lock held       ${result.breakdown.sessions.chunk_lock_held_share} of samples; sessions waiting for it ${result.breakdown.sessions.sessions_waiting_for_chunk_lock_mean} on average
its holder (share of samples):
${Object.entries(result.breakdown.sessions.chunk_lock_holder)
  .map(([k, v]) => `  ${v}  ${k}`)
  .join('\n')}
sessions (mean over ${result.breakdown.sessions.samples} samples):
${Object.entries(result.breakdown.sessions.mean_sessions)
  .slice(0, 14)
  .map(([k, v]) => `  ${v}  ${k}`)
  .join('\n')}
table chunks          API: ${scans(result.breakdown.tables.chunks)}
                      SQL: ${scans(result.sql.tables.chunks)}
${
  result.worker_processes
    ? `worker processes      1: ${result.worker_processes[1].chunks_per_second} chunks/s, 2: ${result.worker_processes[2].chunks_per_second} chunks/s (2 / 1: ${result.worker_processes.two_over_one}; ROLE=api + workers)
search while ingesting p50 / p95 ms: idle ${fmt(result.search_during_ingestion.idle)}; into another dataset ${fmt(result.search_during_ingestion.into_another_dataset)} (${result.search_during_ingestion.into_another_dataset.p50_over_idle} / ${result.search_during_ingestion.into_another_dataset.p95_over_idle} of idle); into the searched one ${fmt(result.search_during_ingestion.into_the_searched_dataset)} (${result.search_during_ingestion.into_the_searched_dataset.p50_over_idle} / ${result.search_during_ingestion.into_the_searched_dataset.p95_over_idle})
`
    : ''
}CPU seconds:
${cpu.map(([span, c]) => `  ${span} (${c.wall_seconds} s): server ${c.server} ${JSON.stringify(c.server_threads)}, database ${JSON.stringify(c.database_sessions)}, redis ${c.redis_shared}, bench ${c.bench_client}, machine ${c.machine_busy} of ${c.machine_capacity} (others ${c.machine_other})`).join('\n')}
written to ${writeResult(MODEL === DEFAULT_MODEL ? 'ingest' : `ingest.${basename(MODEL)}`, result)}`);
}

function fmt(stats) {
  return `${stats.p50_ms} / ${stats.p95_ms}`;
}

function scans(t) {
  return `${t.seq_scan} sequential scans read ${t.seq_tup_read} rows; ${t.idx_scan} index scans; ${t.autoanalyze_count} auto-analyze`;
}

function round(x) {
  return Math.round(x * 100) / 100;
}
