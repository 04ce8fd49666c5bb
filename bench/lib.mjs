// Shared helpers of the benchmark scripts: a throw-away database, the built server in a child process,
// and small statistics. Benchmarks talk to the service over HTTP only, like any client.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import pg from 'pg';
import { createClient } from 'redis';
import { ChunkIndexRepository } from '../dist/modules/chunk-index/chunk-index.repository.js';
import { changedLexemeSource } from '../dist/modules/chunk-index/lexeme-source.js';
import { embed, loadExtractor } from '../dist/modules/embeddings/local-model.js';

export const ADMIN_URL =
  process.env.BENCH_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * BEIR SciFact from `dir` (BENCH_SCIFACT, else `../shared/datasets/scifact`): its documents, its
 * queries' texts by id, and for each train query its judged documents with their grades.
 */
export function scifact(dir = process.env.BENCH_SCIFACT ?? '../shared/datasets/scifact') {
  const lines = (path) => readFileSync(path, 'utf8').split('\n').filter(Boolean);
  const corpus = lines(`${dir}/corpus.jsonl`).map((line) => JSON.parse(line));
  const queries = new Map(
    lines(`${dir}/queries.jsonl`)
      .map((line) => JSON.parse(line))
      .map((q) => [q._id, q.text]),
  );
  const qrels = new Map();
  for (const line of lines(`${dir}/qrels/train.tsv`).slice(1)) {
    const [queryId, docId, score] = line.split('\t');
    if (!qrels.has(queryId)) qrels.set(queryId, new Map());
    qrels.get(queryId).set(docId, Number(score));
  }
  return { corpus, queries, qrels };
}

const sentences = new Intl.Segmenter('en', { granularity: 'sentence' });

/**
 * A SciFact abstract (its title, then its text) cut into windows of two sentences, stride one: the
 * chunks of `bench:search` and `bench:scale`, real scientific text of a chunk's usual length.
 */
export function sentenceWindows(doc) {
  const parts = [...sentences.segment(`${doc.title}. ${doc.text}`)]
    .map((s) => s.segment.trim())
    .filter(Boolean);
  return Array.from({ length: Math.max(1, parts.length - 1) }, (_, i) => parts.slice(i, i + 2).join(' '));
}

/**
 * mulberry32: a seeded generator of uniform numbers in [0, 1), computed in 32-bit integers. (A
 * textbook LCG written in doubles loses bits past 2^53 and can fall into a short cycle.)
 */
export function mulberry32(seed) {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A standard normal number from `uniform` (Box-Muller, one of the pair). */
export function gaussian(uniform) {
  return Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform());
}

/** `items` in a random order drawn from `uniform` (Fisher-Yates), as a new array. */
export function shuffled(items, uniform) {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(uniform() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

export async function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A fresh database of the server at `adminUrl`, migrated with the real CLI. */
export async function createDatabase(adminUrl = ADMIN_URL) {
  const name = `dss_bench_${randomBytes(4).toString('hex')}`;
  await onDatabase(adminUrl, [[`CREATE DATABASE ${name}`]]);
  const url = databaseUrl(adminUrl, name);
  migrate(url);
  return {
    url,
    drop: () => onDatabase(adminUrl, [[`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]]),
  };
}

/**
 * A fresh database on a local Citus cluster (scripts/cluster.sh): made on the coordinator and on each
 * of `workers` and `spares` with the extensions citus and vector, the workers made nodes of it (the
 * spares are not: a benchmark adds them), then migrated through the coordinator, which distributes the
 * schema (docs/citus.md). `workerSettings` are set on the workers' databases (`ALTER DATABASE ... SET`):
 * a session's own SET on the coordinator does not reach the shards.
 */
export async function createCitusDatabase({
  host = '127.0.0.1',
  coordinator = 5433,
  workers = [5434, 5435],
  spares = [],
  workerSettings = {},
} = {}) {
  const name = `dss_bench_citus_${randomBytes(4).toString('hex')}`;
  const admin = (port) => `postgres://postgres@${host}:${port}/postgres`;
  for (const port of [coordinator, ...workers, ...spares]) {
    await onDatabase(admin(port), [[`CREATE DATABASE ${name}`]]);
    const settings = port === coordinator ? [] : Object.entries(workerSettings);
    await onDatabase(databaseUrl(admin(port), name), [
      ['CREATE EXTENSION citus'],
      ['CREATE EXTENSION vector'],
      ...settings.map(([setting, value]) => [`ALTER DATABASE ${name} SET ${setting} = '${value}'`]),
    ]);
  }
  const url = databaseUrl(admin(coordinator), name);
  await onDatabase(url, [
    ['SELECT citus_set_coordinator_host($1, $2)', [host, coordinator]],
    ...workers.map((port) => ['SELECT citus_add_node($1, $2)', [host, port]]),
  ]);
  migrate(url);
  return {
    url,
    name,
    async drop() {
      for (const port of [coordinator, ...workers, ...spares]) {
        await onDatabase(admin(port), [[`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]]);
      }
    },
  };
}

/** `statements` ([sql, params]) in turn on one connection to `url`; each one's rows. */
export async function onDatabase(url, statements) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const results = [];
    for (const [sql, params] of statements) results.push((await client.query(sql, params)).rows);
    return results;
  } finally {
    await client.end();
  }
}

function databaseUrl(serverUrl, name) {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.href;
}

function migrate(url) {
  execFileSync(process.execPath, ['dist/cli.js', 'migrate'], {
    env: { ...process.env, DATABASE_URL: url },
    stdio: 'ignore',
  });
}

/**
 * `node dist/main.js` with the given environment; resolves once /health answers, and fails when it
 * has not within `readyMs` (a server warming a large database's postings takes longer to listen).
 */
export async function startServer(env, { readyMs = 20_000 } = {}) {
  const port = await freePort();
  const child = spawn(process.execPath, ['dist/main.js'], {
    // Benchmarks measure the synthetic models of MODELS_DIR and never fetch one from the hub.
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      MIGRATE_ON_BOOT: 'false',
      EMBEDDING_ALLOW_DOWNLOAD: 'false',
      ...env,
      PORT: String(port),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = performance.now() + readyMs;
  for (;;) {
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      // not listening yet
    }
    if (performance.now() > deadline || child.exitCode !== null) {
      child.kill('SIGTERM');
      throw new Error(`the server did not answer /health within ${readyMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    pid: child.pid,
    /** Peak resident memory of the server so far, in MiB (VmHWM). */
    peakRssMiB() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmHWM:\s+(\d+) kB/.exec(status)[1]) / 1024;
    },
    /** Stops the server and deletes the Redis keys of its REDIS_PREFIX (rate limits, queue). */
    stop: () => stopService(child, env),
  };
}

/**
 * Runs the service's worker (ROLE `worker`) on `env`'s database until `done()` resolves true (asked
 * every 200 ms), then stops it. Returns the worker's log lines (JSON, LOG_LEVEL `info`) whose message
 * is one of `messages`; `onLog(entry)` is told each of them as it comes, `onSpawn(child)` of the process.
 */
export async function runWorker(
  env,
  done,
  { messages = [], timeoutMs = 3_600_000, onLog = () => undefined, onSpawn = () => undefined } = {},
) {
  const child = spawnWorker(env);
  const logged = [];
  let rest = '';
  child.stdout.setEncoding('utf8').on('data', (text) => {
    const lines = (rest + text).split('\n');
    rest = lines.pop();
    for (const line of lines) {
      try {
        const entry = JSON.parse(line);
        if (messages.includes(entry.msg)) {
          logged.push(entry);
          onLog(entry);
        }
      } catch {
        // not a log line
      }
    }
  });
  onSpawn(child);
  const deadline = performance.now() + timeoutMs;
  try {
    while (!(await done())) {
      if (child.exitCode !== null) throw new Error(`the worker exited with ${child.exitCode}`);
      if (performance.now() > deadline) throw new Error(`the worker did not finish within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await stopService(child, env);
  }
  return logged;
}

/** The service's worker (ROLE `worker`) on `env`, logging JSON at `info` to a pipe. */
function spawnWorker(env) {
  return spawn(process.execPath, ['dist/main.js'], {
    env: {
      ...process.env,
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      MIGRATE_ON_BOOT: 'false',
      EMBEDDING_ALLOW_DOWNLOAD: 'false',
      ...env,
      ROLE: 'worker',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

/**
 * Starts `count` worker processes (ROLE `worker`) on `env`; resolves once each has logged that its
 * ingestion worker started. `stop()` ends them (and deletes the Redis keys of env's REDIS_PREFIX).
 */
export async function startWorkers(env, count, { readyMs = 30_000 } = {}) {
  const children = await Promise.all(
    Array.from({ length: count }, async () => {
      const child = spawnWorker(env);
      await new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`a worker did not start within ${readyMs} ms`)),
          readyMs,
        );
        let rest = '';
        child.stdout.setEncoding('utf8').on('data', (text) => {
          const lines = (rest + text).split('\n');
          rest = lines.pop();
          if (lines.some((line) => line.includes('"ingestion worker started"'))) {
            clearTimeout(timer);
            resolve();
          }
        });
        child.once('exit', (code) => reject(new Error(`a worker exited with ${code} before it started`)));
      });
      return child;
    }),
  );
  return {
    pids: children.map((child) => child.pid),
    async stop() {
      await Promise.all(children.map((child) => stopService(child, {})));
      if (env.REDIS_PREFIX) await deleteRedisKeys(env.REDIS_URL ?? process.env.REDIS_URL, env.REDIS_PREFIX);
    },
  };
}

/**
 * Uploads `documents` ({ content, metadata }) into a dataset through the bulk route, `perRequest` a
 * request (NDJSON), `clients` requests at a time. Returns each request's milliseconds and the lines
 * refused (with their errors).
 */
export async function bulkUpload(
  baseUrl,
  apiKeyValue,
  datasetId,
  documents,
  { perRequest = 500, clients = 2 } = {},
) {
  const parts = [];
  for (let i = 0; i < documents.length; i += perRequest) parts.push(documents.slice(i, i + perRequest));
  const requestMs = [];
  const refused = [];
  await pool(parts, clients, async (part) => {
    const started = performance.now();
    const response = await fetch(`${baseUrl}/v1/datasets/${datasetId}/documents/bulk`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${apiKeyValue}`, 'Content-Type': 'application/x-ndjson' },
      body: part.map((document) => JSON.stringify(document)).join('\n'),
    });
    const body = await response.json();
    if (!response.ok)
      throw new Error(`bulk upload: ${response.status} ${JSON.stringify(body).slice(0, 500)}`);
    requestMs.push(performance.now() - started);
    refused.push(...body.results.filter((result) => result.error));
  });
  return { requestMs, refused };
}

/** Stops a service process started on `env`, and deletes the Redis keys of its REDIS_PREFIX. */
async function stopService(child, env) {
  await new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
  if (env.REDIS_PREFIX) await deleteRedisKeys(env.REDIS_URL ?? process.env.REDIS_URL, env.REDIS_PREFIX);
}

async function deleteRedisKeys(url = 'redis://127.0.0.1:6379', prefix) {
  const client = await createClient({ url }).connect();
  try {
    for await (const keys of client.scanIterator({ MATCH: `${prefix}:*`, COUNT: 1000 })) {
      if (keys.length > 0) await client.unlink(keys);
    }
  } finally {
    await client.close();
  }
}

export function apiKey(databaseUrl, account = 'bench') {
  const out = execFileSync(process.execPath, ['dist/cli.js', 'api-keys', 'create', '--account', account], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
  });
  return JSON.parse(out.toString()); // { account_id, key_id, api_key }
}

/** `post(path, body)`: a JSON POST to the server that throws on any non-2xx answer. */
export function poster(baseUrl, headers) {
  return async (path, body) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return response.json();
  };
}

/**
 * `post(path, body)` → `{ status, json }` over one kept-alive connection with node:http. Latency
 * figures use it rather than `fetch`: undici's fetch costs the client about 1.5 ms of CPU per request,
 * on the same two cores as the server, which a benchmark of the server should not charge to it.
 */
export function timedPoster(baseUrl, headers) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const post = (path, body, again = false) =>
    new Promise((resolve, reject) => {
      const data = Buffer.from(JSON.stringify(body));
      const request = http.request(
        `${baseUrl}${path}`,
        { method: 'POST', agent, headers: { ...headers, 'Content-Length': data.length } },
        (response) => {
          const parts = [];
          response.on('data', (part) => parts.push(part));
          response.on('end', () => {
            try {
              resolve({ status: response.statusCode, json: JSON.parse(Buffer.concat(parts).toString()) });
            } catch (error) {
              reject(error);
            }
          });
          response.on('error', reject);
        },
      );
      request.on('error', (error) => {
        // The server closed the idle connection while this process was too busy to see it: the request
        // never reached it, so it is sent again, once, on a new connection.
        if (!again && request.reusedSocket && error.code === 'ECONNRESET') resolve(post(path, body, true));
        else reject(error);
      });
      request.end(data);
    });
  return post;
}

/** Runs `task` over `items` with `concurrency` workers. */
export async function pool(items, concurrency, task) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const index = next++;
        await task(items[index], index);
      }
    }),
  );
}

export function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * Writes a benchmark's figures with the Node.js version that made them: `<name>.json` on the project's
 * runtime (24), `<name>.node<major>.json` on another, so that both can be compared from one run.
 */
export function writeResult(name, result) {
  mkdirSync('bench/results', { recursive: true });
  const major = Number(process.versions.node.split('.')[0]);
  const path = `bench/results/${name}${major >= 24 ? '' : `.node${major}`}.json`;
  writeFileSync(path, `${JSON.stringify({ node: process.version, ...result }, null, 2)}\n`);
  return path;
}

/**
 * An OpenAI-compatible embeddings endpoint on 127.0.0.1 (`POST {baseUrl}/embeddings`) whose model is
 * `embed(text)` → array of numbers: controlled vectors for a server started with
 * `EMBEDDING_PROVIDER=openai` and `OPENAI_BASE_URL=baseUrl`.
 */
export async function startEmbeddingServer(embed) {
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (part) => (body += part));
    request.on('end', () => {
      const { input, model } = JSON.parse(body);
      const texts = Array.isArray(input) ? input : [input];
      const data = texts.map((text, index) => ({ object: 'embedding', index, embedding: [...embed(text)] }));
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.end(
        JSON.stringify({ object: 'list', data, model, usage: { prompt_tokens: 0, total_tokens: 0 } }),
      );
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** Chunks written by one statement of `loadDocuments`, as the pipeline writes a large document. */
const LOAD_BATCH = 5_000;

/** Datasets of `accountId` embedded by `model` at `dimensions`; their `seq`s, in the order given. */
export async function insertDatasets(db, accountId, datasets, { model, dimensions }) {
  const { rows } = await db.query(
    `INSERT INTO datasets (id, account_id, name)
     SELECT id, $3, name FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(id, name, n)
      ORDER BY n
     RETURNING id, seq`,
    [datasets.map((d) => d.id), datasets.map((d) => d.name), accountId],
  );
  // Each dataset's index state, as the service makes it with the dataset.
  await db.query(
    `INSERT INTO dataset_index (dataset_seq, dataset_id, embedding_model, embedding_dimensions)
     SELECT seq, id, $3, $4 FROM unnest($1::bigint[], $2::text[]) AS t(seq, id)`,
    [rows.map((row) => row.seq), rows.map((row) => row.id), model, dimensions],
  );
  const seqs = new Map(rows.map((row) => [row.id, row.seq]));
  return datasets.map((d) => seqs.get(d.id));
}

/**
 * Writes ready documents straight into the tables, as the pipeline leaves them (src/modules/chunk-index):
 * each document's row, its chunks with their vectors, and the chunks' BM25 postings, whose lexemes
 * PostgreSQL computes as indexing does. One statement per `LOAD_BATCH` chunks, two under way at once,
 * so that this process formats a part while PostgreSQL analyses the one before. `documents` is any
 * iterable (a million chunks need not be held at once) of `{ id, datasetId, datasetSeq, metadata,
 * chunks: [{ id, text, vector }] }`, a vector being an array or a Float32Array. The datasets' counts
 * and term statistics follow, with `finishDatasets`. Returns the number of chunks written.
 */
export async function loadDocuments(db, documents) {
  const running = new Set();
  let part = [];
  let partChunks = 0;
  let total = 0;
  const send = async () => {
    const write = writeDocuments(db, part);
    write.catch(() => undefined); // awaited below
    running.add(write);
    write.then(
      () => running.delete(write),
      () => undefined,
    );
    part = [];
    partChunks = 0;
    if (running.size >= 2) await Promise.race(running);
  };
  for (const document of documents) {
    part.push(document);
    partChunks += document.chunks.length;
    total += document.chunks.length;
    if (partChunks >= LOAD_BATCH) await send();
  }
  if (part.length > 0) await send();
  await Promise.all(running);
  return total;
}

async function writeDocuments(db, documents) {
  const chunks = documents.flatMap((document) =>
    document.chunks.map((chunk, ordinal) => ({ ...chunk, document, ordinal })),
  );
  await db.query(
    `INSERT INTO documents (id, dataset_id, dataset_seq, kind, media_type, size_bytes, status, metadata, chunks_created, processed_at)
     SELECT t.id, t.dataset_id, s.seq, 'text', 'text/plain', t.size, 'ready', t.metadata::jsonb, t.chunks, now()
       FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[]) AS t(id, dataset_id, metadata, size, chunks)
       JOIN datasets s ON s.id = t.dataset_id`,
    [
      documents.map((d) => d.id),
      documents.map((d) => d.datasetId),
      documents.map((d) => JSON.stringify(d.metadata)),
      documents.map((d) => d.chunks.reduce((sum, c) => sum + c.text.length, 0)),
      documents.map((d) => d.chunks.length),
    ],
  );
  await db.query(
    `WITH input AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::int[], $5::text[], $6::text[], $7::text[])
                       AS t(id, document_id, dataset_seq, ordinal, content, source, embedding)
     ), analysed AS (
       SELECT input.*, to_tsvector('english', coalesce(source, content)) AS lexemes FROM input
     ), inserted AS (
       INSERT INTO chunks (id, document_id, dataset_seq, ordinal, content, token_count, char_start, char_end,
                           length, embedding)
       SELECT a.id, a.document_id, a.dataset_seq, a.ordinal, a.content, 0, 0, length(a.content),
              coalesce((SELECT sum(coalesce(array_length(l.positions, 1), 1)) FROM unnest(a.lexemes) l), 0),
              a.embedding::vector
         FROM analysed a
       RETURNING seq, id, dataset_seq, length
     )
     INSERT INTO chunk_terms (dataset_seq, term, chunk_seq, tf, length)
     SELECT i.dataset_seq, l.lexeme, i.seq, coalesce(array_length(l.positions, 1), 1), i.length
       FROM inserted i JOIN analysed a ON a.id = i.id, unnest(a.lexemes) l`,
    [
      chunks.map((c) => c.id),
      chunks.map((c) => c.document.id),
      chunks.map((c) => c.document.datasetSeq),
      chunks.map((c) => c.ordinal),
      chunks.map((c) => c.text),
      chunks.map((c) => changedLexemeSource(c.text)),
      chunks.map((c) => vectorText(c.vector)),
    ],
  );
}

/** Nine significant digits: enough for every single-precision number to come back as it was. */
function vectorText(vector) {
  let text = '[';
  for (let i = 0; i < vector.length; i++) text += (i ? ',' : '') + vector[i].toPrecision(9);
  return `${text}]`;
}

/** The datasets' chunk and document counts, total chunk length and term statistics, from their rows. */
export async function finishDatasets(db) {
  await db.query(
    `UPDATE dataset_index SET chunk_count = s.chunks, total_chunk_length = s.total
       FROM (SELECT dataset_seq, count(*) AS chunks, sum(length) AS total FROM chunks GROUP BY dataset_seq) s
      WHERE dataset_index.dataset_seq = s.dataset_seq`,
  );
  // Counted first, written after: Citus refuses a write of a reference table (datasets) in the
  // statement that reads the shards in parallel.
  const { rows } = await db.query(
    `SELECT dataset_id AS id, count(*)::int AS documents FROM documents GROUP BY dataset_id`,
  );
  await db.query(
    `UPDATE datasets SET document_count = s.documents
       FROM unnest($1::text[], $2::int[]) AS s(id, documents)
      WHERE datasets.id = s.id`,
    [rows.map((row) => row.id), rows.map((row) => row.documents)],
  );
  await db.query(
    `INSERT INTO term_stats (dataset_seq, term, df)
     SELECT dataset_seq, term, count(*) FROM chunk_terms GROUP BY dataset_seq, term`,
  );
}

/**
 * Drops the HNSW indexes of `chunks` (a bulk load is faster without them, and one build afterwards
 * makes the graph an index built while serving would have); their definitions, for `createIndexes`.
 */
export async function dropVectorIndexes(db) {
  const { rows } = await db.query(
    `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
      WHERE schemaname = current_schema() AND tablename = 'chunks' AND indexdef LIKE '% USING hnsw %'`,
  );
  for (const { name } of rows) await db.query(`DROP INDEX ${name}`);
  return rows;
}

/**
 * The HNSW index the service makes at start for its model's `dimensions` when they are not 384 (the
 * migrations make that one): `ChunkIndexRepository.ensureVectorIndex`'s own statement, as `{ name,
 * definition }` for `createIndexes`, so that a bulk load builds it once after the load, not the server
 * before it listens.
 */
export async function vectorIndexFor(dimensions) {
  const statements = [];
  await new ChunkIndexRepository({ query: async (text) => statements.push(text) }).ensureVectorIndex(
    dimensions,
  );
  return { name: `chunks_embedding_${dimensions}_idx`, definition: statements[0] };
}

/**
 * Builds `indexes` one after the other with `maintenance_work_mem` (PostgreSQL's default, 64 MB,
 * would spill an HNSW graph of 100,000 vectors to disk); the seconds each took, by name, and what
 * PostgreSQL said meanwhile (pgvector warns when the graph outgrows the memory).
 */
export async function createIndexes(db, indexes, memory = '1GB') {
  const client = await db.connect();
  const notices = [];
  const onNotice = (notice) => notices.push(notice.message);
  client.on('notice', onNotice);
  try {
    await client.query(`SET maintenance_work_mem = '${memory}'`);
    const seconds = {};
    for (const { name, definition } of indexes) {
      const started = performance.now();
      await client.query(definition);
      seconds[name] = round((performance.now() - started) / 1000);
    }
    await client.query('RESET maintenance_work_mem');
    return { seconds, maintenance_work_mem: memory, notices };
  } finally {
    client.off('notice', onNotice);
    client.release();
  }
}

/**
 * What the synthetic bge-small-shaped model costs to embed one query, as a search service's query
 * thread embeds it (the service's own code from dist/: one ONNX thread, q8, CLS pooling): p50 / p95 ms
 * over `queries`, one at a time, after `warmUp` unmeasured.
 */
export async function queryEmbeddingCost(queries, { modelsDir, model, warmUp = 20 }) {
  const extractor = await loadExtractor({ model, modelsDir, threads: 1 });
  try {
    for (const query of queries.slice(0, warmUp)) await embed(extractor, [query]);
    const ms = [];
    for (const query of queries) {
      const started = performance.now();
      await embed(extractor, [query]);
      ms.push(performance.now() - started);
    }
    return { model, queries: queries.length, ...latencyStats(ms) };
  } finally {
    await extractor.dispose();
  }
}

/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`: 100 on Linux). */
const CLOCK_TICKS = 100;

/** User + system CPU seconds of a `/proc/.../stat` line (fields 14 and 15, after the command's parentheses). */
function statCpuSeconds(stat) {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** CPU seconds (user + system, all threads) process `pid` has used so far; null once it has gone. */
export function cpuSeconds(pid) {
  try {
    return statCpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null;
  }
}

/**
 * CPU seconds of each thread of process `pid` so far, by thread id, with the thread's name (Node.js
 * names its main thread `MainThread`, worker threads `WorkerThread`, V8's helpers `V8Worker`, libuv's
 * pool `libuv-worker`).
 */
export function threadCpuSeconds(pid) {
  const threads = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      threads.set(tid, {
        name,
        seconds: statCpuSeconds(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')),
      });
    } catch {
      // the thread ended meanwhile
    }
  }
  return threads;
}

/** Resident memory of process `pid` now and at its peak so far (VmRSS, VmHWM), in MiB. */
export function memoryMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)[1]);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** The machine's busy and total CPU seconds so far, all cores (/proc/stat; idle and iowait are not busy). */
export function machineCpuSeconds() {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const total = ticks.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - ticks[3] - ticks[4]) / CLOCK_TICKS, total: total / CLOCK_TICKS };
}

/** p50 and p95 of latencies in ms, to a tenth. */
export function latencyStats(ms) {
  return { p50_ms: round(percentile(ms, 50)), p95_ms: round(percentile(ms, 95)) };
}

function round(x) {
  return Math.round(x * 10) / 10;
}
