// npm run bench:responsiveness — how long the API keeps a request waiting while the same process
// (ROLE=all, keyword-only, one document at a time) processes a large data file: /health is asked one
// request at a time, every 10 ms, from the upload until the document is ready, for an XML and a YAML
// file of 9.5 MB (the upload limit is 10 MB). Figures per file: the document's processing time, and
// the median, p99 and longest /health answer (the longest is the longest stall of the main thread),
// and, once the file is being indexed, how long a small upload into the same dataset and into another
// one takes (an upload must not wait for the file's chunks to be written).
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
  const post = (path, body) =>
    api(path, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
  const dataset = await post('/v1/datasets', { name: 'responsiveness' });
  const elsewhere = await post('/v1/datasets', { name: 'elsewhere' });
  const timedUpload = async (into) => {
    const started = performance.now();
    await post(`/v1/datasets/${into.id}/documents`, { content: 'A small document uploaded meanwhile.' });
    return Number((performance.now() - started).toFixed(1));
  };
  for (const kind of ['xml', 'yaml']) {
    const file = dataFile(kind);
    for (let round = 0; round < ROUNDS; round++) {
      const form = new FormData();
      form.append('file', new Blob([file]), `records.${kind}`);
      const { document_id: id } = await api(`/v1/datasets/${dataset.id}/documents`, {
        method: 'POST',
        body: form,
      });
      // /health is asked on its own, one request after another, for as long as the document processes;
      // the status is checked, and the uploads made, beside it.
      const latencies = [];
      let processing = true;
      const asking = (async () => {
        while (processing) {
          latencies.push(await health(server.url));
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })();
      let document = { status: 'processing' };
      let uploads = null;
      while (document.status === 'processing') {
        await new Promise((resolve) => setTimeout(resolve, 250));
        document = await api(`/v1/datasets/${dataset.id}/documents/${id}`);
        if (!uploads && document.progress?.stage === 'indexing') {
          const same = await timedUpload(dataset);
          const other = await timedUpload(elsewhere);
          // Counted only if the file was still being indexed when the upload into its dataset returned.
          const after = await api(`/v1/datasets/${dataset.id}/documents/${id}`);
          uploads = after.progress?.stage === 'indexing' ? { same, other } : undefined;
        }
      }
      processing = false;
      await asking;
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
        upload_same_dataset_while_indexing_ms: uploads?.same ?? null,
        upload_other_dataset_while_indexing_ms: uploads?.other ?? null,
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
