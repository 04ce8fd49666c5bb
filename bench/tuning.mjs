// npm run bench:tuning — what one choice of a dataset's fusion weights costs (FusionTuningService,
// docs/search.md "Weights chosen per dataset"): a sweep over one dataset of 10,000 chunks and one of
// 100,000 (BENCH_TUNING_SIZES), each alone in a database of its own, run by the service's own worker.
//
// Each dataset: SciFact's two-sentence windows (bench:search's and bench:scale's chunks), the corpus
// repeated as often as the size needs, each repeat in its own seeded order; vectors of the service's
// model, computed here by its own encoder (a static model: BENCH_MODEL, by default
// minishlab/potion-base-2M in MODELS_DIR, by default ../shared/models), so that the dataset is eligible
// (its vectors are of the worker's model). Loaded with bench:scale's loader, indexed and vacuumed;
// then a worker (ROLE `worker`) starts, builds the dataset's own HNSW index when it has 20,000 chunks
// or more, and idles; the dataset is held back from the tuning meanwhile by a document left
// `processing` (the tuning waits for a quiet dataset). That document is deleted, the next sweep
// (FUSION_TUNING_INTERVAL_SECONDS=1) chooses the weights, and the bench measures, over the sweep: its
// time (the service's own log line), the worker's CPU seconds and peak RSS, its database sessions' CPU
// seconds, and what the database read (pg_stat_database, pg_statio_user_tables), each beside the same
// figures over an idle stretch of the same worker before it.
import os from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { isStaticModelDir, loadStaticModel } from '../dist/modules/embeddings/static-model.js';
import {
  apiKey,
  cpuSeconds,
  createDatabase,
  createIndexes,
  dropVectorIndexes,
  finishDatasets,
  insertDatasets,
  loadDocuments,
  machineCpuSeconds,
  memoryMiB,
  mulberry32,
  runWorker,
  scifact,
  sentenceWindows,
  shuffled,
  vectorIndexFor,
  writeResult,
} from './lib.mjs';

const MODELS_DIR = resolve(process.env.MODELS_DIR ?? '../shared/models');
const MODEL = process.env.BENCH_MODEL ?? 'minishlab/potion-base-2M';
const SIZES = (process.env.BENCH_TUNING_SIZES ?? '10000,100000').split(',').map(Number);
/** The service's default `SEARCH_DATASET_INDEX_MIN_CHUNKS`: datasets from this size get their own index. */
const OWN_INDEX_MIN_CHUNKS = 20_000;
/**
 * Seconds the worker is watched idle before the sweep, and waited after it: PostgreSQL 15 flushes an
 * idle session's statistics within 10 s (PGSTAT_IDLE_INTERVAL), so both windows see them all.
 */
const QUIET_SECONDS = 11;
/** How often the worker's memory and CPU are read during the sweep. */
const SAMPLE_MS = 100;
const SEED = 1_000;
const HOLD = 'doc_hold000000000000000000';

if (!isStaticModelDir(join(MODELS_DIR, MODEL))) {
  throw new Error(`${MODEL} in ${MODELS_DIR} is not a static model: its chunk vectors are computed here`);
}
const model = loadStaticModel(join(MODELS_DIR, MODEL));
const started = performance.now();
const { corpus } = scifact();
const abstracts = corpus.map((doc) => ({ source: doc._id, windows: sentenceWindows(doc) }));
const vectors = abstracts.map((a) => model.embed(a.windows));
console.log(
  `${abstracts.reduce((n, a) => n + a.windows.length, 0)} windows embedded by ${MODEL} in ${seconds(started)} s`,
);

const result = {
  model: MODEL,
  dimensions: model.dimensions,
  machine_cores: os.cpus().length,
  runs: [],
};
for (const size of SIZES) {
  const run = await tune(size);
  result.runs.push(run);
  console.log(JSON.stringify(run, null, 2));
}
result.run_seconds = seconds(started);
result.measured_at = new Date().toISOString();
summary();

/** One dataset of about `size` chunks, loaded, and one sweep of the worker over it. */
async function tune(size) {
  const database = await createDatabase();
  const db = new pg.Pool({ connectionString: database.url, max: 2 });
  try {
    const key = apiKey(database.url);
    const datasetId = `ds_tune${String(size).padStart(18, '0')}`;
    const [seq] = await insertDatasets(db, key.account_id, [{ id: datasetId, name: `tune-${size}` }], {
      model: MODEL,
      dimensions: model.dimensions,
    });
    const indexes = await dropVectorIndexes(db);
    if (model.dimensions !== 384) indexes.push(await vectorIndexFor(model.dimensions));
    let t = performance.now();
    const chunks = await loadDocuments(db, documentsOf(size, datasetId, seq));
    await finishDatasets(db);
    const load = { chunks, seconds: seconds(t) };
    load.build = await createIndexes(db, indexes);
    t = performance.now();
    await db.query('VACUUM ANALYZE');
    load.vacuum_analyze_seconds = seconds(t);
    console.log(`${size}: ${chunks} chunks loaded in ${load.seconds} s`);
    // The document that keeps the dataset from the tuning until the worker is up and idle; its
    // heartbeat ahead, so that the recovery sweep leaves it alone meanwhile.
    await db.query(
      `INSERT INTO documents (id, dataset_id, dataset_seq, kind, media_type, size_bytes, status, heartbeat_at)
       SELECT $1, $2, seq, 'text', 'text/plain', 0, 'processing', now() + interval '1 hour' FROM datasets WHERE id = $2`,
      [HOLD, datasetId],
    );
    const sampleStatement = await explainSample(db, seq);
    const sweep = await sweepOnce(database.url, db, { datasetId, own: chunks >= OWN_INDEX_MIN_CHUNKS });
    return { size, chunks, load, sample_statement: sampleStatement, ...sweep };
  } finally {
    await db.end();
    await database.drop();
  }
}

/**
 * The dataset's documents as `loadDocuments` writes them: SciFact's abstracts, in a seeded order per
 * repeat of the corpus, until `size` chunks; each window's vector is the model's (a repeat's copy of a
 * window has its text, and so its vector).
 */
function* documentsOf(size, datasetId, datasetSeq) {
  let chunk = 0;
  let number = 0;
  for (let replica = 0; chunk < size; replica++) {
    for (const a of shuffled(abstracts.keys(), mulberry32(SEED + replica))) {
      if (chunk >= size) return;
      const abstract = abstracts[a];
      yield {
        id: `doc_${String(number++).padStart(22, '0')}`,
        datasetId,
        datasetSeq,
        metadata: { source: abstract.source, replica },
        chunks: abstract.windows.map((text, i) => ({
          id: `chk_${String(chunk + i).padStart(22, '0')}`,
          text,
          vector: vectors[a][i],
        })),
      };
      chunk += abstract.windows.length;
    }
  }
}

/**
 * The tuning's first read, `ChunkReadsRepository.sample` (its statement, as the service sends it):
 * its plan, time and buffers, EXPLAIN ANALYZE'd once.
 */
async function explainSample(db, datasetSeq) {
  const { rows } = await db.query(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)
     SELECT c.seq::text AS seq, c.content FROM chunks c
      WHERE c.dataset_seq = $1
      ORDER BY hashint8(c.seq), c.seq
      LIMIT $2`,
    [datasetSeq, 200],
  );
  const [{ Plan: plan, 'Execution Time': ms }] = rows[0]['QUERY PLAN'];
  const scan = (node) => (node.Plans ? scan(node.Plans.at(-1)) : node);
  const leaf = scan(plan);
  return {
    ms: Math.round(ms * 10) / 10,
    scan: leaf['Node Type'],
    rows_scanned: leaf['Actual Rows'],
    shared_blocks: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'],
  };
}

/**
 * Starts a worker, waits until it is up (and has built the dataset's own index when `own`), watches it
 * idle for QUIET_SECONDS, deletes the holding document, and waits for the sweep's log line, then for
 * QUIET_SECONDS more. The figures of the sweep, and of the idle stretch of the same length before it.
 */
async function sweepOnce(url, db, { datasetId, own }) {
  const env = {
    DATABASE_URL: url,
    REDIS_PREFIX: `bench_tuning_${process.pid}`,
    EMBEDDING_PROVIDER: 'local',
    EMBEDDING_MODEL: MODEL,
    MODELS_DIR,
    FUSION_TUNING_INTERVAL_SECONDS: '1',
  };
  const logs = [];
  let pid;
  const out = {};
  const steps = (async () => {
    const up = performance.now();
    while (!logs.some((e) => e.msg === 'ingestion worker started')) await sleep(100);
    if (own) {
      while (!logs.some((e) => e.msg === 'built the vector index of a dataset')) await sleep(100);
      const built = logs.find((e) => e.msg === 'built the vector index of a dataset');
      out.own_index_build_seconds = Math.round(built.ms / 100) / 10;
    }
    out.worker_ready_seconds = seconds(up);
    await sleep(2_000);
    const idle = await watch(db, pid, () => sleep(QUIET_SECONDS * 1000));
    await db.query('DELETE FROM documents WHERE id = $1', [HOLD]);
    const released = performance.now();
    const chosen = () => logs.find((e) => e.msg === 'chose the fusion weights of a dataset');
    const sweep = await watch(db, pid, async () => {
      while (!chosen()) await sleep(SAMPLE_MS / 2);
      out.release_to_choice_seconds = seconds(released);
      await sleep(QUIET_SECONDS * 1000);
    });
    const line = chosen();
    Object.assign(out, {
      sweep_ms: line.ms,
      pseudo_queries: line.pseudo_queries,
      weights: line.weights,
      dataset_id: line.dataset_id,
      worker: {
        rss_before_mib: idle.rss_end_mib,
        peak_rss_before_mib: idle.peak_rss_end_mib,
        peak_rss_after_mib: sweep.peak_rss_end_mib,
        rss_max_sampled_mib: sweep.rss_max_mib,
      },
      idle: idle.figures,
      sweep_window: sweep.figures,
    });
  })();
  let failed = null;
  let finished = false;
  steps.then(
    () => (finished = true),
    (error) => (failed = error), // and thrown again below
  );
  await runWorker(
    env,
    async () => {
      if (failed) throw failed;
      return finished;
    },
    {
      messages: [
        'ingestion worker started',
        'built the vector index of a dataset',
        'chose the fusion weights of a dataset',
      ],
      onLog: (entry) => logs.push(entry),
      onSpawn: (child) => (pid = child.pid),
      timeoutMs: 600_000,
    },
  );
  await steps;
  if (
    logs
      .filter((e) => e.msg === 'chose the fusion weights of a dataset')
      .some((e) => e.dataset_id !== datasetId)
  ) {
    throw new Error('the worker chose the weights of another dataset');
  }
  return out;
}

/**
 * Runs `during()` and measures over it: the worker's CPU seconds and memory (RSS sampled every
 * SAMPLE_MS), its database sessions' CPU seconds, the database's statistics (pg_stat_database's rows
 * and blocks, pg_statio_user_tables' blocks of each table) and the machine's CPU.
 */
async function watch(db, pid, during) {
  const before = await snapshot(db, pid);
  // Sessions' CPU seconds as last read: a pool closes a connection idle for 10 s, and its session with it.
  const sessionCpu = new Map(before.sessions);
  const readSessions = async () => {
    for (const [p, s] of await sessionsCpu(db)) sessionCpu.set(p, s);
  };
  let rssMax = 0;
  let sampling = true;
  const sampler = (async () => {
    for (let i = 0; sampling; i++) {
      rssMax = Math.max(rssMax, memoryMiB(pid).rss);
      if (i % 5 === 0) await readSessions();
      await sleep(SAMPLE_MS);
    }
  })();
  await during();
  sampling = false;
  await sampler;
  const after = await snapshot(db, pid);
  for (const [p, s] of after.sessions) sessionCpu.set(p, s);
  const delta = (a, b) =>
    Object.fromEntries(Object.keys(b).map((k) => [k, Number(b[k]) - Number(a[k] ?? 0)]));
  const sessions = [...sessionCpu].reduce((sum, [p, s]) => sum + s - (before.sessions.get(p) ?? 0), 0);
  return {
    rss_end_mib: round(after.memory.rss),
    peak_rss_end_mib: round(after.memory.peak),
    rss_max_mib: round(rssMax),
    figures: {
      wall_seconds: round((after.at - before.at) / 1000),
      worker_cpu_seconds: round(after.cpu - before.cpu),
      database_sessions_cpu_seconds: round(sessions),
      machine_busy_seconds: round(after.machine.busy - before.machine.busy),
      machine_capacity_seconds: round(after.machine.total - before.machine.total),
      database: delta(before.database, after.database),
      blocks_by_table: Object.fromEntries(
        Object.entries(after.tables)
          .map(([table, blocks]) => [table, blocks - (before.tables[table] ?? 0)])
          .filter(([, blocks]) => blocks > 0)
          .sort((a, b) => b[1] - a[1]),
      ),
    },
  };
}

async function snapshot(db, pid) {
  const {
    rows: [database],
  } = await db.query(
    `SELECT xact_commit, tup_returned, tup_fetched, blks_hit, blks_read, temp_bytes
       FROM pg_stat_database WHERE datname = current_database()`,
  );
  // Blocks of each table, its indexes and its TOAST, hit in shared buffers or read.
  const { rows: tables } = await db.query(
    `SELECT relname, (coalesce(heap_blks_hit, 0) + coalesce(heap_blks_read, 0) + coalesce(idx_blks_hit, 0)
                      + coalesce(idx_blks_read, 0) + coalesce(toast_blks_hit, 0) + coalesce(toast_blks_read, 0)
                      + coalesce(tidx_blks_hit, 0) + coalesce(tidx_blks_read, 0))::float8 AS blocks
       FROM pg_statio_user_tables`,
  );
  return {
    at: performance.now(),
    cpu: cpuSeconds(pid),
    memory: memoryMiB(pid),
    machine: machineCpuSeconds(),
    database,
    tables: Object.fromEntries(tables.map((t) => [t.relname, t.blocks])),
    sessions: await sessionsCpu(db),
  };
}

/** CPU seconds of each client session of the database (the worker's, and this bench's two). */
async function sessionsCpu(db) {
  const { rows } = await db.query(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`,
  );
  return new Map(rows.map((s) => [s.pid, cpuSeconds(s.pid) ?? 0]).filter(([, s]) => s > 0));
}

function summary() {
  console.log(`\nfusion tuning, one sweep of one dataset (${MODEL}, ${result.dimensions} dimensions):`);
  for (const r of result.runs) {
    const s = r.sweep_window;
    const i = r.idle;
    console.log(
      `  ${r.chunks} chunks: ${r.sweep_ms} ms (${r.pseudo_queries} pseudo-queries, weights ${JSON.stringify(r.weights)}); ` +
        `worker CPU ${s.worker_cpu_seconds} s over ${s.wall_seconds} s (idle ${i.worker_cpu_seconds} s over ${i.wall_seconds} s), ` +
        `database sessions ${s.database_sessions_cpu_seconds} s (idle ${i.database_sessions_cpu_seconds}); ` +
        `worker RSS ${r.worker.rss_before_mib} MiB before, peak ${r.worker.peak_rss_before_mib} → ${r.worker.peak_rss_after_mib} MiB; ` +
        `blocks ${s.database.blks_hit + s.database.blks_read} (idle ${i.database.blks_hit + i.database.blks_read}), ` +
        `rows ${s.database.tup_returned + s.database.tup_fetched} (idle ${i.database.tup_returned + i.database.tup_fetched}); ` +
        `sample statement ${r.sample_statement.ms} ms over ${r.sample_statement.rows_scanned} rows`,
    );
  }
  console.log(`run ${result.run_seconds} s\nwritten to ${writeResult('tuning', result)}`);
}

function seconds(since) {
  return Math.round((performance.now() - since) / 100) / 10;
}

function round(x) {
  return Math.round(x * 100) / 100;
}
