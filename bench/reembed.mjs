// npm run bench:reembed — what moving a dataset to another model costs the database: the pages of
// a re-embedding's build (`ReembedService.build`, the service's own code from dist/) and its switch,
// the one transaction that makes the new vectors the searched ones, for a dataset of 10,000 and one
// of 100,000 chunks (BENCH_REEMBED_CHUNKS, comma-separated). The model is left out: the provider
// answers each page at once with seeded vectors of 384 dimensions, so the figures are what a build
// adds to its model's time. Meanwhile a client searches the dataset (hybrid, over HTTP, one request
// at a time): its latency before, during the build's pages and during the switch.
// Chunks: SciFact abstracts cut into windows of two sentences (bench:search's), repeated as needed,
// loaded straight into the tables (bench:scale's loader) with seeded vectors of the old model.
import { NestFactory } from '@nestjs/core';
import pg from 'pg';
import { pino } from 'pino';
import { AppModule } from '../dist/app.module.js';
import { loadConfiguration } from '../dist/configuration.js';
import { ReembedService } from '../dist/modules/embeddings/reembed.service.js';
import {
  apiKey,
  createDatabase,
  finishDatasets,
  insertDatasets,
  latencyStats,
  loadDocuments,
  mulberry32,
  scifact,
  sentenceWindows,
  startEmbeddingServer,
  startServer,
  writeResult,
} from './lib.mjs';

const SIZES = (process.env.BENCH_REEMBED_CHUNKS ?? '10000,100000').split(',').map(Number);
const DIMS = 384;
const OLD_MODEL = 'bench-old-384';
const NEW_MODEL = 'bench-new-384';
/** An id of the service's shape (`ds_` and 22 characters), which a search checks. */
const DATASET = `ds_reembed${'0'.repeat(15)}`;

const windows = scifact().corpus.flatMap(sentenceWindows);
const queries = [...scifact().queries.values()].slice(0, 200);

function seededVector(uniform) {
  const vector = Array.from({ length: DIMS }, () => uniform() - 0.5);
  const norm = Math.hypot(...vector);
  return vector.map((x) => x / norm);
}

const result = { dimensions: DIMS, page_chunks: 256, runs: [] };
for (const size of SIZES) result.runs.push(await run(size));
console.log(JSON.stringify(result, null, 2));
writeResult('reembed', result);

async function run(size) {
  const database = await createDatabase();
  const db = new pg.Pool({ connectionString: database.url, max: 2 });
  // The server embeds queries with the old model: an OpenAI-compatible endpoint of seeded vectors.
  const uniformQueries = mulberry32(7);
  const embedder = await startEmbeddingServer(() => seededVector(uniformQueries));
  let server;
  let app;
  try {
    const key = apiKey(database.url);
    const [seq] = await insertDatasets(db, key.account_id, [{ id: DATASET, name: 'reembed' }], {
      model: OLD_MODEL,
      dimensions: DIMS,
    });
    const uniform = mulberry32(size);
    const loadStarted = performance.now();
    await loadDocuments(db, documents(size, seq, uniform));
    await finishDatasets(db);
    await db.query('ANALYZE chunks');
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    console.log(`${size} chunks loaded in ${loadSeconds.toFixed(1)} s`);

    server = await startServer({
      DATABASE_URL: database.url,
      REDIS_PREFIX: `bench_${process.pid}_${size}`,
      ROLE: 'api',
      EMBEDDING_PROVIDER: 'openai',
      OPENAI_API_KEY: 'bench',
      OPENAI_BASE_URL: embedder.baseUrl,
      EMBEDDING_MODEL: OLD_MODEL,
      RATE_LIMIT_API_KEY: '10000000',
    });
    const phase = { value: 'before' };
    const latencies = { before: [], build: [], switch: [] };
    let searching = true;
    const client = (async () => {
      for (let i = 0; searching; i++) {
        const started = performance.now();
        const response = await fetch(`${server.url}/v1/mcp/query`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${key.api_key}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ dataset_id: DATASET, query: queries[i % queries.length], limit: 10 }),
        });
        await response.text();
        if (!response.ok) throw new Error(`search answered ${response.status}`);
        latencies[phase.value].push(performance.now() - started);
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 3_000));

    app = await NestFactory.createApplicationContext(
      AppModule.forRoot(
        loadConfiguration({
          ...process.env,
          DATABASE_URL: database.url,
          REDIS_PREFIX: `bench_${process.pid}_${size}_w`,
          ROLE: 'worker',
          EMBEDDING_PROVIDER: 'none',
          LOG_LEVEL: 'silent',
        }),
        pino({ level: 'silent' }),
      ),
      { logger: false },
    );
    const newVectors = mulberry32(size + 1);
    const provider = {
      model: NEW_MODEL,
      dimensions: DIMS,
      embedPassages: (texts) => Promise.resolve(texts.map(() => seededVector(newVectors))),
    };
    const reembed = app.get(ReembedService);
    await reembed.request(DATASET, provider);
    phase.value = 'build';
    const started = performance.now();
    let lastPage = started;
    const built = await reembed.build(DATASET, provider, undefined, (done) => {
      lastPage = performance.now();
      if (done === size) phase.value = 'switch';
    });
    const finished = performance.now();
    searching = false;
    await client;
    const { rows } = await db.query(
      `SELECT embedding_model, (SELECT count(*) FROM chunks WHERE next_embedding IS NOT NULL)::int AS left
         FROM dataset_index`,
    );
    if (rows[0].embedding_model !== NEW_MODEL || rows[0].left !== 0 || built.chunks !== size)
      throw new Error(`the re-embedding did not finish: ${JSON.stringify({ rows, built })}`);
    const figures = {
      chunks: size,
      load_seconds: round(loadSeconds),
      build_seconds: round((lastPage - started) / 1000),
      build_chunks_per_second: Math.round(size / ((lastPage - started) / 1000)),
      switch_seconds: round((finished - lastPage) / 1000),
      search_ms: Object.fromEntries(
        Object.entries(latencies).map(([name, ms]) => [name, { queries: ms.length, ...latencyStats(ms) }]),
      ),
    };
    console.log(JSON.stringify(figures));
    return figures;
  } finally {
    await app?.close();
    await server?.stop();
    await embedder.close();
    await db.end();
    await database.drop();
  }
}

/** `size` chunks of SciFact's windows, a document of ten windows each, with the old model's vectors. */
function* documents(size, datasetSeq, uniform) {
  for (let first = 0, n = 0; first < size; first += 10, n++) {
    const count = Math.min(10, size - first);
    yield {
      id: `doc_reembed${n}`,
      datasetId: DATASET,
      datasetSeq,
      metadata: {},
      chunks: Array.from({ length: count }, (_, i) => ({
        id: `chk_reembed${first + i}`,
        text: windows[(first + i) % windows.length],
        vector: seededVector(uniform),
      })),
    };
  }
}

function round(x) {
  return Math.round(x * 100) / 100;
}
