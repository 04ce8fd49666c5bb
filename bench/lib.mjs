// Shared helpers of the benchmark scripts: a throw-away database, the built server in a child process,
// and small statistics. Benchmarks talk to the service over HTTP only, like any client.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import pg from 'pg';
import { createClient } from 'redis';

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

export async function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A fresh database, migrated with the real CLI. */
export async function createDatabase() {
  const name = `dss_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  execFileSync(process.execPath, ['dist/cli.js', 'migrate'], {
    env: { ...process.env, DATABASE_URL: url.href },
    stdio: 'ignore',
  });
  return {
    url: url.href,
    async drop() {
      const client = new pg.Client({ connectionString: ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/** `node dist/main.js` with the given environment; resolves once /health answers. */
export async function startServer(env) {
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
  for (let i = 0; i < 400; i++) {
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
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
    async stop() {
      await new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', resolve);
        child.kill('SIGTERM');
      });
      if (env.REDIS_PREFIX) await deleteRedisKeys(env.REDIS_URL ?? process.env.REDIS_URL, env.REDIS_PREFIX);
    },
  };
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

export function apiKey(databaseUrl) {
  const out = execFileSync(process.execPath, ['dist/cli.js', 'api-keys', 'create', '--account', 'bench'], {
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
  return (path, body) =>
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
      request.on('error', reject);
      request.end(data);
    });
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
