// npm run bench:highlights — what `highlight: true` adds to a search, over HTTP, in one run: every SciFact
// abstract (its title, then its text: 5,183 chunks of about 1,400 characters, near a default chunk's
// length) in one dataset, its queries searched keyword-only, each with highlights off and on in turn, at
// `limit` 5 and 50, and as batches of 10. Highlights cost the same whatever leg found the results (they
// are computed from the results' content), so the keyword leg alone is measured: no model runs.
//
// BENCH_QUERIES (default 300) queries, BENCH_ROUNDS (default 3) rounds of each; the figures are medians
// over queries and rounds of the latency off, on, and of the difference of each pair.
import pg from 'pg';
import {
  apiKey,
  createDatabase,
  finishDatasets,
  insertDatasets,
  loadDocuments,
  percentile,
  scifact,
  startServer,
  timedPoster,
  writeResult,
} from './lib.mjs';

const QUERIES = Number(process.env.BENCH_QUERIES ?? 300);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const { corpus, queries: queryTexts } = scifact();
const queries = [...queryTexts.values()].slice(0, QUERIES);

const database = await createDatabase();
const db = new pg.Pool({ connectionString: database.url, max: 4 });
const key = apiKey(database.url);
const datasetId = 'ds_highlights000000000000';
const [datasetSeq] = await insertDatasets(db, key.account_id, [{ id: datasetId, name: 'scifact' }], {
  model: 'bench/none',
  dimensions: 4,
});
const chunks = await loadDocuments(
  db,
  corpus.map((doc, d) => ({
    id: `doc_${String(d).padStart(22, '0')}`,
    datasetId,
    datasetSeq,
    metadata: {},
    chunks: [{ id: `chk_${String(d).padStart(22, '0')}`, text: `${doc.title}. ${doc.text}`, vector: [1, 0, 0, 0] }],
  })),
);
await finishDatasets(db);
await db.end();

const server = await startServer(
  {
    DATABASE_URL: database.url,
    ROLE: 'api',
    EMBEDDING_PROVIDER: 'none',
    RATE_LIMIT_API_KEY: '1000000',
    REDIS_PREFIX: `bench_highlights_${process.pid}`,
  },
  { readyMs: 60_000 },
);
const post = timedPoster(server.url, {
  Authorization: `Bearer ${key.api_key}`,
  'Content-Type': 'application/json',
});

/** One request's latency in ms, its results and its body's size. */
async function timed(path, body) {
  const started = performance.now();
  const { status, json } = await post(path, body);
  const ms = performance.now() - started;
  if (status !== 200) throw new Error(`${path}: ${status} ${JSON.stringify(json)}`);
  const results = json.results.flatMap((r) => (r.results ? r.results : [r]));
  return { ms, results: results.length, bytes: JSON.stringify(json).length };
}

/** Each body searched with highlights off and on, alternately (which first, by round), `ROUNDS` times. */
async function measure(path, bodies) {
  const off = [];
  const on = [];
  const added = [];
  const perResult = [];
  let results = 0;
  let bytesOff = 0;
  let bytesOn = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, body] of bodies.entries()) {
      const first = (round + i) % 2 === 0;
      const a = await timed(path, { ...body, highlight: first });
      const b = await timed(path, { ...body, highlight: !first });
      const [plain, highlighted] = first ? [b, a] : [a, b];
      off.push(plain.ms);
      on.push(highlighted.ms);
      added.push(highlighted.ms - plain.ms);
      if (highlighted.results > 0) perResult.push((highlighted.ms - plain.ms) / highlighted.results);
      results += highlighted.results;
      bytesOff += plain.bytes;
      bytesOn += highlighted.bytes;
    }
  }
  const median = (values) => Math.round(percentile(values, 50) * 1000) / 1000;
  return {
    requests: off.length,
    results_per_request: Math.round((results / off.length) * 10) / 10,
    off_p50_ms: median(off),
    on_p50_ms: median(on),
    added_p50_ms: median(added),
    added_per_result_p50_ms: median(perResult),
    added_bytes_per_request: Math.round((bytesOn - bytesOff) / off.length),
  };
}

try {
  // Warm-up: every query once, each way (postings cache, plans, the lexeme tables).
  for (const query of queries) {
    for (const highlight of [false, true])
      await timed('/v1/mcp/query', { dataset_id: datasetId, query, mode: 'keyword', highlight });
  }
  const single = (limit) => queries.map((query) => ({ dataset_id: datasetId, query, mode: 'keyword', limit }));
  const batches = [];
  for (let i = 0; i + 10 <= queries.length; i += 10)
    batches.push({ dataset_id: datasetId, queries: queries.slice(i, i + 10), mode: 'keyword', limit: 5 });
  const figures = {
    chunks,
    queries: queries.length,
    rounds: ROUNDS,
    limit_5: await measure('/v1/mcp/query', single(5)),
    limit_50: await measure('/v1/mcp/query', single(50)),
    batch_10_limit_5: await measure('/v1/mcp/batch-query', batches),
  };
  console.log(JSON.stringify(figures, null, 2));
  console.log(`written to ${writeResult('highlights', figures)}`);
} finally {
  await server.stop();
  await database.drop();
}
