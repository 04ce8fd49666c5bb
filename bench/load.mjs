// npm run bench:load — a corpus of 100,000 documents (BENCH_LOAD_DOCUMENTS) loaded into a fresh
// deployment twice: through the bulk route (NDJSON requests of 500 documents, two at a time), and
// through the command line (`documents import` of a JSONL file), each into a dataset of its own. Reports
// documents/s and chunks/s from the first upload to the last document ready, the server's peak RSS, and
// whether each dataset's BM25 statistics equal a recount from its chunks and postings.
//
// The corpus is SciFact's 5,183 abstracts repeated (each copy with its own `copy` metadata): real text,
// as many documents as needed. The model is a static one (BENCH_MODEL in MODELS_DIR, by default
// minishlab/potion-base-2M in ../shared/models), the fast embedder this load is about; a transformer
// would make it a benchmark of the model (bench:ingest measures that).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { apiKey, bulkUpload, createDatabase, poster, scifact, startServer, writeResult } from './lib.mjs';

const MODELS_DIR = resolve(process.env.MODELS_DIR ?? '../shared/models');
const MODEL = process.env.BENCH_MODEL ?? 'minishlab/potion-base-2M';
const COUNT = Number(process.env.BENCH_LOAD_DOCUMENTS ?? 100_000);
const CONCURRENCY = process.env.INGEST_CONCURRENCY ?? '64';

const { corpus } = scifact();
const documents = Array.from({ length: COUNT }, (_, i) => {
  const doc = corpus[i % corpus.length];
  return {
    content: `${doc.title}\n\n${doc.text}`,
    metadata: { source_id: doc._id, copy: Math.floor(i / corpus.length) },
  };
});

const database = await createDatabase();
const db = new pg.Pool({ connectionString: database.url, max: 2 });
const prefix = `bench_load_${process.pid}`;
const server = await startServer({
  DATABASE_URL: database.url,
  REDIS_PREFIX: prefix,
  EMBEDDING_PROVIDER: 'local',
  EMBEDDING_MODEL: MODEL,
  MODELS_DIR,
  INGEST_CONCURRENCY: CONCURRENCY,
  RATE_LIMIT_API_KEY: '10000000',
});
const dir = mkdtempSync(join(tmpdir(), 'bench-load-'));
const result = { model: MODEL, documents: COUNT, ingest_concurrency: Number(CONCURRENCY) };
try {
  const key = apiKey(database.url).api_key;
  const post = poster(server.url, { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' });

  const viaRoute = await post('/v1/datasets', { name: 'bulk route' });
  console.log(`loading ${COUNT} documents through the bulk route ...`);
  result.bulk_route = await timed(viaRoute.id, async () => {
    const { refused } = await bulkUpload(server.url, key, viaRoute.id, documents, {
      perRequest: 500,
      clients: 2,
    });
    if (refused.length > 0) throw new Error(`refused: ${JSON.stringify(refused[0])}`);
  });

  const viaCli = await post('/v1/datasets', { name: 'command line' });
  const file = join(dir, 'corpus.jsonl');
  writeFileSync(file, documents.map((doc) => JSON.stringify(doc)).join('\n') + '\n');
  console.log(`loading ${COUNT} documents with documents import ...`);
  result.command_line = await timed(viaCli.id, async () => {
    const child = spawn(
      process.execPath,
      ['dist/cli.js', 'documents', 'import', viaCli.id, file, '--url', server.url],
      { env: { ...process.env, DSS_API_KEY: key }, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let out = '';
    child.stdout.on('data', (part) => (out += part));
    const [code] = await once(child, 'exit');
    if (code !== 0) throw new Error(`documents import exited with ${code}: ${out.slice(0, 500)}`);
  });
  result.server_peak_rss_mib = Math.round(server.peakRssMiB());
  result.measured_at = new Date().toISOString();
} finally {
  await server.stop();
  await db.end();
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
}

for (const [name, run] of [
  ['bulk route', result.bulk_route],
  ['command line', result.command_line],
]) {
  console.log(
    `${name.padEnd(13)} ${run.documents_per_second} documents/s, ${run.chunks_per_second} chunks/s ` +
      `(${run.ready} ready, ${run.failed} failed, ${run.chunks} chunks, ${run.seconds} s; uploads done at ` +
      `${run.upload_seconds} s); statistics exact: ${run.statistics_exact}`,
  );
}
console.log(`server peak RSS ${result.server_peak_rss_mib} MiB\nwritten to ${writeResult('load', result)}`);

/** Runs `upload` into a dataset, waits for its documents to settle, and checks its statistics. */
async function timed(datasetId, upload) {
  const started = performance.now();
  await upload();
  const uploaded = performance.now();
  for (;;) {
    const { rows } = await db.query(
      `SELECT count(*) FILTER (WHERE status = 'processing')::int AS processing FROM documents WHERE dataset_id = $1`,
      [datasetId],
    );
    if (rows[0].processing === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const seconds = (performance.now() - started) / 1000;
  const {
    rows: [counts],
  } = await db.query(
    `SELECT count(*) FILTER (WHERE status = 'ready')::int AS ready, count(*) FILTER (WHERE status = 'failed')::int AS failed,
            (SELECT count(*)::int FROM chunks c JOIN datasets s ON s.seq = c.dataset_seq WHERE s.id = $1) AS chunks
       FROM documents WHERE dataset_id = $1`,
    [datasetId],
  );
  return {
    ...counts,
    upload_seconds: round((uploaded - started) / 1000),
    seconds: round(seconds),
    documents_per_second: round(counts.ready / seconds),
    chunks_per_second: round(counts.chunks / seconds),
    statistics_exact: await statisticsExact(datasetId),
  };
}

/** Every term's df is its number of postings; the dataset's totals are its chunks'. */
async function statisticsExact(datasetId) {
  const { rows } = await db.query(
    `SELECT (SELECT count(*)::int FROM term_stats t
              WHERE t.dataset_seq = i.dataset_seq
                AND t.df <> (SELECT count(*) FROM chunk_terms p WHERE p.dataset_seq = t.dataset_seq AND p.term = t.term))
              AS wrong_df,
            i.chunk_count = (SELECT count(*) FROM chunks WHERE dataset_seq = i.dataset_seq) AS count_ok,
            i.total_chunk_length = (SELECT coalesce(sum(length), 0) FROM chunks WHERE dataset_seq = i.dataset_seq) AS length_ok
       FROM dataset_index i WHERE i.dataset_id = $1`,
    [datasetId],
  );
  return rows[0].wrong_df === 0 && rows[0].count_ok && rows[0].length_ok;
}

function round(x) {
  return Math.round(x * 100) / 100;
}
