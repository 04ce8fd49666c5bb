// npm run bench:ingest — ingests BEIR SciFact (5,183 documents) through the HTTP API and reports
// documents/s, chunks/s, the server's peak RSS, and the pipeline's embedding throughput as a share of
// the raw throughput of the same model in a tight loop over the same chunks, measured in this run.
// Model: the synthetic bge-small-shaped model (random weights, real cost; ../shared/models/README.md).
import { readFileSync } from 'node:fs';
import { env, pipeline } from '@huggingface/transformers';
import pg from 'pg';
import { apiKey, createDatabase, pool, poster, startServer, writeResult } from './lib.mjs';

const MODELS_DIR = process.env.MODELS_DIR ?? '.cache/models';
const MODEL = process.env.BENCH_MODEL ?? 'synthetic/bert-L12-H384';
const CORPUS = process.env.BENCH_CORPUS ?? '../shared/datasets/scifact/corpus.jsonl';
const LIMIT = Number(process.env.BENCH_DOCUMENTS ?? Infinity);
const BATCH = Number(process.env.EMBEDDING_BATCH_SIZE ?? 32);
const CLIENTS = 8;

const documents = readFileSync(CORPUS, 'utf8')
  .split('\n')
  .filter(Boolean)
  .slice(0, LIMIT)
  .map((line) => JSON.parse(line))
  .map((doc) => ({ content: `${doc.title}\n\n${doc.text}`, metadata: { source_id: doc._id } }));

const database = await createDatabase();
const server = await startServer({
  DATABASE_URL: database.url,
  REDIS_PREFIX: `bench_${process.pid}`,
  EMBEDDING_PROVIDER: 'local',
  EMBEDDING_MODEL: MODEL,
  MODELS_DIR,
  INGEST_CONCURRENCY: process.env.INGEST_CONCURRENCY ?? '32',
  RATE_LIMIT_API_KEY: '10000000',
});
const headers = {
  Authorization: `Bearer ${apiKey(database.url).api_key}`,
  'Content-Type': 'application/json',
};
const post = poster(server.url, headers);

const db = new pg.Pool({ connectionString: database.url, max: 2 });
let chunkTexts;
const result = { model: MODEL, documents: documents.length, clients: CLIENTS };
try {
  const dataset = await post('/v1/datasets', { name: 'scifact' });
  console.log(`ingesting ${documents.length} documents with ${MODEL} ...`);
  const started = performance.now();
  await pool(documents, CLIENTS, (doc) => post(`/v1/datasets/${dataset.id}/documents`, doc));
  const uploaded = performance.now();
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
  const { rows } = await db.query('SELECT content FROM chunks ORDER BY seq');
  chunkTexts = rows.map((row) => row.content);
  const seconds = (finished - started) / 1000;
  Object.assign(result, {
    chunks: chunkTexts.length,
    upload_seconds: round((uploaded - started) / 1000),
    total_seconds: round(seconds),
    documents_per_second: round(documents.length / seconds),
    chunks_per_second: round(chunkTexts.length / seconds),
    server_peak_rss_mib: round(server.peakRssMiB()),
  });
} finally {
  await server.stop();
  await db.end();
  await database.drop();
}

// The same model, in this process, in a tight loop over the same chunks, in batches of the same size.
env.localModelPath = MODELS_DIR;
env.allowRemoteModels = false;
const extractor = await pipeline('feature-extraction', MODEL, { dtype: 'q8' });
await extractor(chunkTexts.slice(0, BATCH), { pooling: 'cls', normalize: true });
const rawStarted = performance.now();
for (let i = 0; i < chunkTexts.length; i += BATCH) {
  await extractor(chunkTexts.slice(i, i + BATCH), { pooling: 'cls', normalize: true });
}
const rawSeconds = (performance.now() - rawStarted) / 1000;
result.raw_model_chunks_per_second = round(chunkTexts.length / rawSeconds);
result.pipeline_to_raw_ratio = round(result.chunks_per_second / result.raw_model_chunks_per_second);
result.target_ratio = 0.8;
result.measured_at = new Date().toISOString();

console.log(`
documents/s           ${result.documents_per_second}   (${result.documents} documents, ${result.failed} failed, ${result.total_seconds} s)
chunks/s              ${result.chunks_per_second}   (${result.chunks} chunks)
server peak RSS       ${result.server_peak_rss_mib} MiB
raw model chunks/s    ${result.raw_model_chunks_per_second}   (same model, same chunks, batches of ${BATCH}, tight loop)
pipeline / raw        ${result.pipeline_to_raw_ratio}   (target >= ${result.target_ratio})
written to ${writeResult('ingest', result)}`);

function round(x) {
  return Math.round(x * 100) / 100;
}
