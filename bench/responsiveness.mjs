// npm run bench:responsiveness — how long the API keeps a request waiting while the same process
// (ROLE=all, keyword-only, one document at a time) processes a large data file: /health is asked one
// request at a time, every 10 ms, from the upload until the document is ready, for an XML and a YAML
// file of 9.5 MB (the upload limit is 10 MB). Figures per file: the document's processing time, and
// the median, p99 and longest /health answer; the longest is the longest stall of the main thread.
import http from 'node:http';
import { apiKey, createDatabase, percentile, startServer, writeResult } from './lib.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const FILE_BYTES = 9_500_000;

/** A data file of about FILE_BYTES: a list of small records, as an export of a table would be. */
function dataFile(kind) {
  const records = [];
  for (let i = 0, size = 0; size < FILE_BYTES; i++) {
    const record =
      kind === 'xml'
        ? `<item id="${i}"><text>Words about item ${i}</text><tags><t>a</t><t>b</t></tags></item>`
        : `- id: ${i}\n  text: Words about item ${i}\n  tags: [a, b]`;
    records.push(record);
    size += record.length + 1;
  }
  return kind === 'xml' ? `<items>\n${records.join('\n')}\n</items>` : records.join('\n');
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
/** One /health request over a kept-alive connection; resolves with its latency in ms. */
const health = (url) =>
  new Promise((resolve, reject) => {
    const start = performance.now();
    http
      .get(`${url}/health`, { agent }, (response) => {
        response.resume();
        response.on('end', () => resolve(performance.now() - start));
      })
      .on('error', reject);
  });

const database = await createDatabase();
const server = await startServer({
  DATABASE_URL: database.url,
  REDIS_PREFIX: `bench_r${process.pid}`,
  ROLE: 'all',
  EMBEDDING_PROVIDER: 'none',
  INGEST_CONCURRENCY: '1',
  RATE_LIMIT_API_KEY: '10000000',
});
const results = [];
try {
  const auth = { Authorization: `Bearer ${apiKey(database.url).api_key}` };
  const api = async (path, init = {}) => {
    const response = await fetch(`${server.url}${path}`, { ...init, headers: { ...auth, ...init.headers } });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const dataset = await api('/v1/datasets', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'responsiveness' }),
  });
  for (const kind of ['xml', 'yaml']) {
    const file = dataFile(kind);
    for (let round = 0; round < ROUNDS; round++) {
      const form = new FormData();
      form.append('file', new Blob([file]), `records.${kind}`);
      const { document_id: id } = await api(`/v1/datasets/${dataset.id}/documents`, {
        method: 'POST',
        body: form,
      });
      const latencies = [];
      let document = { status: 'processing' };
      let checked = performance.now();
      while (document.status === 'processing') {
        latencies.push(await health(server.url));
        await new Promise((resolve) => setTimeout(resolve, 10));
        if (performance.now() - checked > 250) {
          checked = performance.now();
          document = await api(`/v1/datasets/${dataset.id}/documents/${id}`);
        }
      }
      if (document.status !== 'ready') throw new Error(`${kind}: ${JSON.stringify(document.error)}`);
      const result = {
        kind,
        file_mb: Number((file.length / 1e6).toFixed(1)),
        round,
        processing_time_ms: document.processing_time_ms,
        health_requests: latencies.length,
        health_p50_ms: Number(percentile(latencies, 50).toFixed(1)),
        health_p99_ms: Number(percentile(latencies, 99).toFixed(1)),
        health_max_ms: Number(Math.max(...latencies).toFixed(1)),
      };
      console.log(JSON.stringify(result));
      results.push(result);
    }
  }
} finally {
  await server.stop();
  await database.drop();
}
console.log(`written to ${writeResult('responsiveness', { rounds: ROUNDS, results })}`);
