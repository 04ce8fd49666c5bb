// npm run bench:rebalance — a worker added to a loaded Citus cluster and the shards moved onto it
// (`citus_rebalance_start`) while clients search and upload: what failed, what came back wrong, what
// was lost. On the local clusters of scripts/cluster.sh (a coordinator, two workers, a spare third
// worker, a Redis Cluster), with a database of its own.
//
// BENCH_DATASETS datasets of BENCH_DOCS SciFact abstracts each are uploaded through the API (the real
// static model potion-base-2M, so that the vector leg runs); every query of a fixed set (SciFact
// queries × the three modes × a dataset each) is answered once as the baseline. Then SEARCHERS clients
// search those datasets in a loop, comparing each answer with the baseline (the datasets do not change:
// an answer that differs is wrong), and UPLOADERS clients upload new documents into other datasets.
// Refused requests are retried by the client (up to RETRIES times, 250 ms apart; uploads with one
// Idempotency-Key per document, so a retry never doubles one). After WARM_MS of load the spare worker
// is added and the shards rebalanced; the load runs on for WARM_MS after the move ends. At the end every
// uploaded document must be ready and found by a keyword search for its own token.
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import {
  apiKey,
  createCitusDatabase,
  onDatabase,
  percentile,
  pool,
  scifact,
  startServer,
  writeResult,
} from './lib.mjs';

const HOST = '127.0.0.1';
const COORDINATOR = 5433;
const WORKERS = [5434, 5435];
const SPARE = 5436;
const DATASETS = Number(process.env.BENCH_DATASETS ?? 16);
const DOCS = Number(process.env.BENCH_DOCS ?? 40);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 20);
const SEARCHERS = Number(process.env.BENCH_SEARCHERS ?? 3);
const UPLOADERS = Number(process.env.BENCH_UPLOADERS ?? 1);
const WARM_MS = Number(process.env.BENCH_WARM_MS ?? 5_000);
const RETRIES = 5;

execFileSync('bash', ['scripts/cluster.sh', 'start'], { stdio: 'inherit' });
execFileSync('bash', ['scripts/cluster.sh', 'spare'], { stdio: 'inherit' });

const database = await createCitusDatabase({
  host: HOST,
  coordinator: COORDINATOR,
  workers: WORKERS,
  spares: [SPARE],
});
const databaseUrl = database.url;
const key = apiKey(databaseUrl);

const server = await startServer(
  {
    DATABASE_URL: databaseUrl,
    REDIS_URL: `redis://${HOST}:7001`,
    REDIS_CLUSTER: 'true',
    REDIS_PREFIX: `bench_rebalance_${process.pid}`,
    EMBEDDING_PROVIDER: 'local',
    EMBEDDING_MODEL: 'minishlab/potion-base-2M',
    MODELS_DIR: resolve('../shared/models'),
    RATE_LIMIT_API_KEY: '10000000',
    // The searched datasets must not change while they are compared with their baseline.
    FUSION_TUNING_MIN_CHUNKS: '10000000',
  },
  { readyMs: 120_000 },
);
const headers = { Authorization: `Bearer ${key.api_key}`, 'Content-Type': 'application/json' };

async function call(method, path, body, extra = {}) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { ...headers, ...extra },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, json: await response.json().catch(() => null) };
}

/** `call` retried while refused (any status but the expected one), as a client would. */
async function retried(counts, expected, method, path, body, extra) {
  for (let attempt = 0; ; attempt++) {
    const started = performance.now();
    let answer;
    try {
      answer = await call(method, path, body, extra);
    } catch (error) {
      answer = { status: 0, json: { error: String(error) } };
    }
    counts.latencies?.push(performance.now() - started);
    if (answer.status === expected) {
      if (attempt > 0) counts.retriedOk++;
      return answer;
    }
    counts.refused++;
    counts.statuses[answer.status] = (counts.statuses[answer.status] ?? 0) + 1;
    if (attempt === RETRIES) {
      counts.failed++;
      return answer;
    }
    await new Promise((done) => setTimeout(done, 250));
  }
}

const { corpus, queries } = scifact();
const datasetIds = [];
for (let d = 0; d < DATASETS + UPLOADERS; d++) {
  const { json } = await call('POST', '/v1/datasets', { name: `rebalance ${d}` });
  datasetIds.push(json.id);
}
const searched = datasetIds.slice(0, DATASETS);
const uploadInto = datasetIds.slice(DATASETS);
const loadStarted = performance.now();
await pool(
  searched.flatMap((id, d) => corpus.slice(d * DOCS, (d + 1) * DOCS).map((doc) => [id, doc])),
  4,
  async ([id, doc]) => {
    const { status } = await call('POST', `/v1/datasets/${id}/documents`, {
      content: `${doc.title}\n\n${doc.text}`,
    });
    if (status !== 201) throw new Error(`upload: ${status}`);
  },
);
async function processing(ids) {
  let total = 0;
  for (const id of ids) {
    const { json } = await call('GET', `/v1/datasets/${id}/documents?status=processing&limit=1`);
    total += json.total;
  }
  return total;
}
while ((await processing(searched)) > 0) await new Promise((done) => setTimeout(done, 500));
const loadSeconds = (performance.now() - loadStarted) / 1000;
console.log(`${DATASETS * DOCS} documents in ${DATASETS} datasets ready in ${loadSeconds.toFixed(1)} s`);

const texts = [...queries.values()].slice(0, QUERIES);
const cases = texts.flatMap((query, q) =>
  ['keyword', 'semantic', 'hybrid'].map((mode) => ({ query, mode, datasetId: searched[q % DATASETS] })),
);
const idsOf = (json) => json.results.map((result) => result.chunk_id).join(',');
const ask = (counts, c) =>
  retried(counts, 200, 'POST', '/v1/mcp/query', {
    dataset_id: c.datasetId,
    query: c.query,
    mode: c.mode,
    limit: 10,
  });
const baselineCounts = { refused: 0, failed: 0, retriedOk: 0, statuses: {} };
for (const c of cases) c.expected = idsOf((await ask(baselineCounts, c)).json);
if (baselineCounts.failed > 0)
  throw new Error(`the baseline itself failed: ${JSON.stringify(baselineCounts)}`);

const placements = async () =>
  (
    await onDatabase(databaseUrl, [
      [
        `SELECT n.nodeport AS port, count(*)::int AS shards FROM pg_dist_placement p
           JOIN pg_dist_node n ON n.groupid = p.groupid GROUP BY n.nodeport ORDER BY n.nodeport`,
      ],
    ])
  )[0];
const before = await placements();

const search = { refused: 0, failed: 0, retriedOk: 0, wrong: 0, answered: 0, statuses: {}, latencies: [] };
const upload = { refused: 0, failed: 0, retriedOk: 0, accepted: 0, statuses: {}, latencies: [] };
const uploaded = [];
let running = true;
const searchers = Array.from({ length: SEARCHERS }, async (_, s) => {
  for (let i = s; running; i++) {
    const c = cases[i % cases.length];
    const answer = await ask(search, c);
    if (answer.status !== 200) continue;
    search.answered++;
    if (idsOf(answer.json) !== c.expected) search.wrong++;
  }
});
const uploaders = Array.from({ length: UPLOADERS }, async (_, u) => {
  for (let i = 0; running; i++) {
    const token = `rebalancetoken${u}x${i}x${randomBytes(3).toString('hex')}`;
    const answer = await retried(
      upload,
      201,
      'POST',
      `/v1/datasets/${uploadInto[u]}/documents`,
      { content: `${corpus[(i * 7) % corpus.length].text} ${token}` },
      { 'Idempotency-Key': randomUUID() },
    );
    if (answer.status === 201) {
      upload.accepted++;
      uploaded.push({ datasetId: uploadInto[u], documentId: answer.json.document_id, token });
    }
  }
});

await new Promise((done) => setTimeout(done, WARM_MS));
const moveStarted = performance.now();
await onDatabase(databaseUrl, [
  ['SELECT citus_add_node($1, $2)', [HOST, SPARE]],
  ['SELECT citus_rebalance_start()'],
]);
let state;
let lastReport = 0;
for (;;) {
  [[state]] = await onDatabase(databaseUrl, [
    ['SELECT state::text, details FROM citus_rebalance_status() ORDER BY job_id DESC LIMIT 1'],
  ]);
  if (!state || !['scheduled', 'running', 'cancelling'].includes(state.state)) break;
  if (performance.now() - lastReport > 10_000) {
    lastReport = performance.now();
    console.log(`rebalance ${state.state}: ${JSON.stringify(state.details)}`);
  }
  await new Promise((done) => setTimeout(done, 500));
}
const moveSeconds = (performance.now() - moveStarted) / 1000;
await new Promise((done) => setTimeout(done, WARM_MS));
running = false;
await Promise.all([...searchers, ...uploaders]);
const after = await placements();

// Nothing lost: every accepted upload gets ready and is found by its own token.
const deadline = performance.now() + 120_000;
while ((await processing(uploadInto)) > 0 && performance.now() < deadline) {
  await new Promise((done) => setTimeout(done, 500));
}
let lost = 0;
for (const { datasetId, documentId, token } of uploaded) {
  const { json } = await call('POST', '/v1/mcp/query', {
    dataset_id: datasetId,
    query: token,
    mode: 'keyword',
    limit: 1,
  });
  if (json?.results?.[0]?.document_id !== documentId) lost++;
}
// The searched datasets answer as before the move.
const finalCounts = { refused: 0, failed: 0, retriedOk: 0, statuses: {} };
let finalWrong = 0;
for (const c of cases) if (idsOf((await ask(finalCounts, c)).json) !== c.expected) finalWrong++;

await server.stop();
await database.drop();

const ms = (values, p) => Math.round(percentile(values, p) * 10) / 10;
const result = {
  documents: DATASETS * DOCS,
  datasets: DATASETS,
  load_seconds: Math.round(loadSeconds * 10) / 10,
  rebalance: {
    state: state?.state ?? null,
    seconds: Math.round(moveSeconds * 10) / 10,
    placements_before: before,
    placements_after: after,
  },
  searches: {
    answered: search.answered,
    wrong: search.wrong,
    refused: search.refused,
    retried_then_answered: search.retriedOk,
    failed_after_retries: search.failed,
    statuses: search.statuses,
    p50_ms: ms(search.latencies, 50),
    p99_ms: ms(search.latencies, 99),
  },
  uploads: {
    accepted: upload.accepted,
    refused: upload.refused,
    retried_then_accepted: upload.retriedOk,
    failed_after_retries: upload.failed,
    statuses: upload.statuses,
    lost,
    p50_ms: ms(upload.latencies, 50),
    p99_ms: ms(upload.latencies, 99),
  },
  after_move: { cases: cases.length, wrong: finalWrong, failed: finalCounts.failed },
};
console.log(JSON.stringify(result, null, 2));
console.log(`written to ${writeResult('rebalance', result)}`);
