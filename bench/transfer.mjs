// npm run bench:transfer — export and import of a large dataset over HTTP (docs/export-format.md):
// chunks/s each way, the time to the export's first byte, the server's peak resident memory during
// each, and whether the bench's queries find the same results (ids aside) in the copy as in the source.
//
// The dataset is bench:search's: every SciFact abstract cut into windows of two sentences, three times
// over with `category` metadata c0-c2 (135,768 chunks), random unit vectors of 384 dimensions recorded
// as the local model's (synthetic/bert-L12-H384), so that the import keeps them. Loaded straight into
// the tables as bench:search loads it, with each document's original bytes (its windows' text), as an
// upload stores them. Two abstracts of a repeat make one document (7,775 documents), which keeps the
// dataset within the service's 10,000 documents a dataset that an import checks, as an upload does.
//
// BENCH_REPLICAS (default 3) repeats the corpus fewer times; BENCH_TRANSFER_QUERIES (default 300)
// bounds the queries compared.
import { createReadStream, createWriteStream, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import {
  apiKey,
  createDatabase,
  createIndexes,
  dropVectorIndexes,
  finishDatasets,
  gaussian,
  insertDatasets,
  loadDocuments,
  mulberry32,
  scifact,
  sentenceWindows,
  startServer,
  writeResult,
} from './lib.mjs';

const MODELS_DIR = resolve(process.env.MODELS_DIR ?? '.cache/models');
const MODEL = process.env.BENCH_MODEL ?? 'synthetic/bert-L12-H384';
const DIMS = 384;
const REPLICAS = Number(process.env.BENCH_REPLICAS ?? 3);
const QUERIES = Number(process.env.BENCH_TRANSFER_QUERIES ?? 300);
const ABSTRACTS_PER_DOCUMENT = 2;
const MODES = ['keyword', 'semantic', 'hybrid'];

const { corpus: docs, queries: queryTexts } = scifact();
const queries = [...queryTexts.values()].slice(0, QUERIES);
const uniform = mulberry32(42);
function unitVector() {
  const v = Array.from({ length: DIMS }, () => gaussian(uniform));
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

const database = await createDatabase();
const db = new pg.Pool({ connectionString: database.url, max: 4 });
const key = apiKey(database.url);
const result = { model: MODEL, dimensions: DIMS, replicas: REPLICAS };
const folder = await mkdtemp(join(tmpdir(), 'bench-transfer-'));
let server;
let rss;
try {
  const datasetId = 'ds_bench00000000000000000';
  const [seq] = await insertDatasets(db, key.account_id, [{ id: datasetId, name: 'bench' }], {
    model: MODEL,
    dimensions: DIMS,
  });
  const indexes = await dropVectorIndexes(db);
  const documents = [];
  let chunkCount = 0;
  for (let r = 0; r < REPLICAS; r++) {
    for (let first = 0; first < docs.length; first += ABSTRACTS_PER_DOCUMENT) {
      const group = docs.slice(first, first + ABSTRACTS_PER_DOCUMENT);
      const chunks = group.flatMap((doc) =>
        sentenceWindows(doc).map((text) => ({
          id: `chk_${String(chunkCount++).padStart(22, '0')}`,
          text,
          vector: unitVector(),
        })),
      );
      documents.push({
        id: `doc_${String(documents.length + 1).padStart(22, '0')}`,
        datasetId,
        datasetSeq: seq,
        metadata: { category: `c${r}`, source: group.map((doc) => doc._id).join(',') },
        chunks,
      });
    }
  }
  const t0 = performance.now();
  await loadDocuments(db, documents);
  await finishDatasets(db);
  // Each document's original bytes: what an upload stores, and what the archive carries.
  await db.query(
    `INSERT INTO document_sources (document_id, dataset_seq, content)
     SELECT document_id, dataset_seq, convert_to(string_agg(content, E'\\n\\n' ORDER BY ordinal), 'UTF8') FROM chunks
      GROUP BY document_id, dataset_seq`,
  );
  await createIndexes(db, indexes);
  await db.query('VACUUM ANALYZE');
  result.documents = documents.length;
  result.chunks = chunkCount;
  result.load_seconds = Math.round((performance.now() - t0) / 1000);
  console.log(`${chunkCount} chunks in ${documents.length} documents loaded in ${result.load_seconds} s`);
  documents.length = 0;

  server = await startServer({
    DATABASE_URL: database.url,
    REDIS_PREFIX: `bench_transfer_${process.pid}`,
    // No worker: nothing tunes, indexes or embeds either dataset behind the comparison's back.
    ROLE: 'api',
    EMBEDDING_PROVIDER: 'local',
    EMBEDDING_MODEL: MODEL,
    MODELS_DIR,
    RATE_LIMIT_API_KEY: '10000000',
  });
  const auth = { Authorization: `Bearer ${key.api_key}` };
  rss = sampler(server.pid);

  const searchAll = async (id) => {
    const answers = [];
    for (const mode of MODES) {
      for (const query of queries) {
        const response = await fetch(`${server.url}/v1/mcp/query`, {
          method: 'POST',
          headers: { ...auth, 'Content-Type': 'application/json' },
          body: JSON.stringify({ dataset_id: id, query, mode, limit: 10 }),
        });
        if (response.status !== 200) throw new Error(`search: ${response.status} ${await response.text()}`);
        const { results } = await response.json();
        answers.push(results.map(({ chunk_id: _c, document_id: _d, ...rest }) => JSON.stringify(rest)));
      }
    }
    return answers;
  };
  const before = await searchAll(datasetId);
  const baseline = rss.peak();

  // Export: headers, first byte, whole archive, to a file.
  const file = join(folder, 'bench.dss.ndjson.gz');
  rss.reset();
  const started = performance.now();
  const response = await fetch(`${server.url}/v1/datasets/${datasetId}/export`, { headers: auth });
  const headersMs = performance.now() - started;
  if (response.status !== 200) throw new Error(`export: ${response.status} ${await response.text()}`);
  const reader = response.body.getReader();
  const first = await reader.read();
  const firstByteMs = performance.now() - started;
  await pipeline(
    Readable.from(
      (async function* () {
        if (!first.done) yield first.value;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          yield value;
        }
      })(),
    ),
    createWriteStream(file),
  );
  const exportSeconds = (performance.now() - started) / 1000;
  result.export = {
    headers_ms: Math.round(headersMs),
    first_byte_ms: Math.round(firstByteMs),
    seconds: round(exportSeconds),
    chunks_per_second: Math.round(chunkCount / exportSeconds),
    archive_mib: round(statSync(file).size / 1024 / 1024),
    server_peak_rss_mib: Math.round(rss.peak()),
  };
  console.log('export', result.export);

  rss.reset();
  const importStarted = performance.now();
  // node:http: fetch gives up waiting for an answer's headers after five minutes.
  const imported = await postFile(`${server.url}/v1/datasets/import?name=bench%20copy`, file, {
    ...auth,
    'Content-Type': 'application/gzip',
    'Content-Length': String(statSync(file).size),
  });
  const importSeconds = (performance.now() - importStarted) / 1000;
  const body = JSON.parse(imported.text);
  if (imported.status !== 201) throw new Error(`import: ${imported.status} ${JSON.stringify(body)}`);
  result.import = {
    seconds: round(importSeconds),
    chunks_per_second: Math.round(chunkCount / importSeconds),
    server_peak_rss_mib: Math.round(rss.peak()),
    vectors: body.import.vectors,
    chunks_without_vector: body.import.chunks_without_vector,
  };
  result.server_rss_before_mib = Math.round(baseline);
  console.log('import', result.import);

  const { rows } = await db.query(
    `SELECT d.id, i.chunk_count::float8 AS chunks, i.total_chunk_length::float8 AS length,
            (SELECT count(*)::int FROM term_stats t WHERE t.dataset_seq = d.seq) AS terms,
            (SELECT sum(df)::float8 FROM term_stats t WHERE t.dataset_seq = d.seq) AS df
       FROM datasets d JOIN dataset_index i ON i.dataset_seq = d.seq WHERE d.id = ANY($1) ORDER BY d.id = $2 DESC`,
    [[datasetId, body.id], datasetId],
  );
  const vectors = await db.query(
    `SELECT md5(string_agg(c.embedding::text, ',' ORDER BY c.content, c.embedding::text)) AS digest
       FROM datasets d JOIN chunks c ON c.dataset_seq = d.seq WHERE d.id = ANY($1) GROUP BY d.id`,
    [[datasetId, body.id]],
  );
  result.vectors_equal = vectors.rows.length === 2 && vectors.rows[0].digest === vectors.rows[1].digest;
  result.index = {
    source: rows[0],
    copy: rows[1],
    equal: JSON.stringify({ ...rows[0], id: 0 }) === JSON.stringify({ ...rows[1], id: 0 }),
  };

  await db.query('VACUUM ANALYZE');
  const after = await searchAll(body.id);
  // The source again, now that its copy shares the HNSW graph: the vector leg walks an approximate
  // graph, whose walks change with what else it holds.
  const sourceAfter = await searchAll(datasetId);
  const compare = (a, b) =>
    Object.fromEntries(
      MODES.map((mode, m) => {
        const range = (answers) => answers.slice(m * queries.length, (m + 1) * queries.length);
        const [x, y] = [range(a), range(b)];
        const identical = x.filter((answer, i) => JSON.stringify(answer) === JSON.stringify(y[i])).length;
        const overlap =
          x.reduce(
            (sum, answer, i) =>
              sum + answer.filter((hit) => y[i].includes(hit)).length / Math.max(answer.length, 1),
            0,
          ) / x.length;
        return [mode, { queries: x.length, identical_top10: identical, mean_top10_overlap: round(overlap) }];
      }),
    );
  result.searches = {
    copy_vs_source_before_import: compare(before, after),
    copy_vs_source_after_import: compare(sourceAfter, after),
  };
  console.log('index', result.index, 'searches', result.searches);
  rss.stop();
  console.log(`wrote ${writeResult('transfer', result)}`);
} finally {
  rss?.stop();
  await server?.stop();
  await db.end();
  await database.drop();
  await rm(folder, { recursive: true, force: true });
}

/** The process's resident memory sampled every 100 ms (VmRSS), its peak since the last reset. */
function sampler(pid) {
  let peak = 0;
  const sample = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      peak = Math.max(peak, Number(/VmRSS:\s+(\d+) kB/.exec(status)[1]) / 1024);
    } catch {
      // the server has exited
    }
  };
  const timer = setInterval(sample, 100);
  sample();
  return {
    peak: () => (sample(), peak),
    reset: () => {
      peak = 0;
      sample();
    },
    stop: () => clearInterval(timer),
  };
}

function postFile(target, path, headers) {
  return new Promise((resolve, reject) => {
    const sent = request(target, { method: 'POST', headers }, (response) => {
      const parts = [];
      response.on('data', (part) => parts.push(part));
      response.on('end', () =>
        resolve({ status: response.statusCode, text: Buffer.concat(parts).toString() }),
      );
      response.on('error', reject);
    });
    sent.on('error', reject);
    pipeline(createReadStream(path), sent).catch(reject);
  });
}

function round(x) {
  return Math.round(x * 100) / 100;
}
