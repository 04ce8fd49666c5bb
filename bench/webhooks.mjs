// npm run bench:webhooks — webhook delivery throughput to a local receiver, and what the outbox adds
// to the API call that emits an event.
// - Throughput: DATASETS datasets, each updated UPDATES times (CLIENTS at a time) with one webhook
//   subscribed to dataset.updated; deliveries/s from the first update to the last delivery received.
//   A dataset's events are delivered in order, one at a time, so the datasets are what runs in parallel.
// - Added latency: the median time of the outbox's INSERT (the statement each emitting transaction
//   adds), measured alone over ROUNDS transactions; and the API's median PATCH latency, which includes it.
import http from 'node:http';
import pg from 'pg';
import { apiKey, createDatabase, percentile, pool, startServer, writeResult } from './lib.mjs';

const DATASETS = Number(process.env.BENCH_DATASETS ?? 100);
const UPDATES = Number(process.env.BENCH_UPDATES ?? 20);
const CLIENTS = 8;
const ROUNDS = 2_000;

let received = 0;
let lastReceivedAt = 0;
const ids = new Set();
let duplicates = 0;
const receiver = http.createServer((request, response) => {
  const parts = [];
  request.on('data', (part) => parts.push(part));
  request.on('end', () => {
    const { id } = JSON.parse(Buffer.concat(parts).toString());
    if (ids.has(id)) duplicates++;
    ids.add(id);
    received++;
    lastReceivedAt = performance.now();
    response.end();
  });
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${receiver.address().port}/hooks`;

const database = await createDatabase();
const server = await startServer({
  DATABASE_URL: database.url,
  REDIS_PREFIX: `bench_${process.pid}`,
  EMBEDDING_PROVIDER: 'none',
  RATE_LIMIT_API_KEY: '10000000',
  WEBHOOK_HOURLY_LIMIT: '1000000',
});
const key = apiKey(database.url);
const headers = { Authorization: `Bearer ${key.api_key}`, 'Content-Type': 'application/json' };
const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });

/** One request; its latency in ms. */
function call(method, path, body) {
  const data = Buffer.from(JSON.stringify(body));
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${server.url}${path}`,
      { method, agent, headers: { ...headers, 'Content-Length': data.length } },
      (response) => {
        const parts = [];
        response.on('data', (part) => parts.push(part));
        response.on('end', () => {
          if (response.statusCode >= 300) reject(new Error(`${path}: ${response.statusCode}`));
          else
            resolve({ ms: performance.now() - started, json: JSON.parse(Buffer.concat(parts).toString()) });
        });
      },
    );
    request.on('error', reject);
    request.end(data);
  });
}

const result = { datasets: DATASETS, updates_per_dataset: UPDATES, clients: CLIENTS };
const db = new pg.Pool({ connectionString: database.url, max: 2 });
try {
  const datasets = [];
  for (let i = 0; i < DATASETS; i++)
    datasets.push((await call('POST', '/v1/datasets', { name: `d${i}` })).json.id);
  await call('POST', '/v1/webhooks', { url: receiverUrl, events: ['dataset.updated'] });

  const jobs = datasets.flatMap((id) => Array.from({ length: UPDATES }, (_, n) => ({ id, n })));
  console.log(`${jobs.length} updates, each an event delivered to one webhook ...`);
  const latencies = [];
  const started = performance.now();
  await pool(jobs, CLIENTS, async ({ id, n }) => {
    latencies.push((await call('PATCH', `/v1/datasets/${id}`, { description: `version ${n}` })).ms);
  });
  const updated = performance.now();
  while (received < jobs.length) {
    if (performance.now() - updated > 300_000)
      throw new Error(`only ${received} of ${jobs.length} delivered`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const seconds = (lastReceivedAt - started) / 1000;
  Object.assign(result, {
    deliveries: received,
    duplicates,
    seconds: Number(seconds.toFixed(2)),
    deliveries_per_s: Number((received / seconds).toFixed(1)),
    api_patch_ms_p50: Number(percentile(latencies, 50).toFixed(2)),
    api_patch_ms_p95: Number(percentile(latencies, 95).toFixed(2)),
  });

  // The outbox's own statement, alone: each emitting transaction adds exactly this.
  const client = await db.connect();
  const inserts = [];
  try {
    for (let i = 0; i < ROUNDS; i++) {
      await client.query('BEGIN');
      const t0 = performance.now();
      await client.query(
        `INSERT INTO events (id, account_id, event, resource_id, data)
         SELECT $1, account_id, 'dataset.updated', id, $2 FROM datasets WHERE id = $3`,
        [
          `evt_bench${String(i).padStart(18, '0')}`,
          { dataset_id: datasets[0], changes: {}, updated_by: 'bench' },
          datasets[0],
        ],
      );
      inserts.push(performance.now() - t0);
      await client.query('ROLLBACK');
    }
  } finally {
    client.release();
  }
  result.outbox_insert_ms_p50 = Number(percentile(inserts, 50).toFixed(3));
  result.outbox_insert_ms_p95 = Number(percentile(inserts, 95).toFixed(3));
  console.log(result);
  console.log(`written to ${writeResult('webhooks', result)}`);
} finally {
  agent.destroy();
  await db.end();
  await server.stop();
  await database.drop();
  receiver.close();
}
