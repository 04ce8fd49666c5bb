// npm run bench:documents — what replacing a document in place (PUT) costs against uploading it:
// a document of about 100 chunks (SciFact abstracts, packed into paragraphs that each fill most of a
// chunk) is uploaded, then replaced ROUNDS times with one paragraph edited each time; each round also
// uploads the edited text as a new document, the cost of deleting and uploading again. Reports, per
// round and as medians, the chunks the model embedded and reused (the document's own counts) and the
// processing times, and their ratios within the round.
//
// Model: BENCH_MODEL in MODELS_DIR; by default the synthetic bge-small-shaped model (random weights,
// real cost; ../shared/models/README.md), so that embedding is most of a document's processing time.
import { resolve } from 'node:path';
import { apiKey, createDatabase, scifact, startServer, writeResult } from './lib.mjs';

const MODELS_DIR = resolve(process.env.MODELS_DIR ?? '.cache/models');
const MODEL = process.env.BENCH_MODEL ?? 'synthetic/bert-L12-H384';
const PARAGRAPHS = Number(process.env.BENCH_PARAGRAPHS ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
/** A paragraph's length: about 390 tokens at SciFact's 4.4 characters a token, under the 512 of a chunk. */
const PARAGRAPH_CHARS = 1_700;

const { corpus } = scifact();
const words = corpus
  .slice(0, 2_000)
  .map((doc) => doc.text)
  .join(' ')
  .split(/\s+/);
let next = 0;
const paragraphs = Array.from({ length: PARAGRAPHS }, () => {
  let paragraph = '';
  while (paragraph.length < PARAGRAPH_CHARS) paragraph += `${words[next++ % words.length]} `;
  return paragraph.trim();
});

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

const database = await createDatabase();
const key = apiKey(database.url);
const server = await startServer(
  {
    DATABASE_URL: database.url,
    REDIS_PREFIX: `bench_documents_${process.pid}`,
    EMBEDDING_PROVIDER: 'local',
    EMBEDDING_MODEL: MODEL,
    MODELS_DIR,
    RATE_LIMIT_API_KEY: '10000000',
  },
  { readyMs: 120_000 },
);
const headers = { Authorization: `Bearer ${key.api_key}`, 'Content-Type': 'application/json' };

async function call(method, path, body) {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers,
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.status === 204 ? null : response.json();
}

async function ready(datasetId, documentId) {
  for (;;) {
    const document = await call('GET', `/v1/datasets/${datasetId}/documents/${documentId}`);
    if (document.status === 'failed')
      throw new Error(`${documentId} failed: ${JSON.stringify(document.error)}`);
    if (document.status === 'ready') return document;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const result = { model: MODEL, paragraphs: PARAGRAPHS, paragraph_chars: PARAGRAPH_CHARS, rounds: [] };
try {
  const dataset = await call('POST', '/v1/datasets', { name: 'replace bench' });
  const text = paragraphs.join('\n\n');
  const created = await call('POST', `/v1/datasets/${dataset.id}/documents`, { content: text });
  const first = await ready(dataset.id, created.document_id);
  result.chunks = first.chunks_created;
  result.first_upload_ms = first.processing_time_ms;
  console.log(`uploaded: ${first.chunks_created} chunks in ${first.processing_time_ms} ms`);

  const current = [...paragraphs];
  for (let round = 0; round < ROUNDS; round++) {
    // A sentence added in the middle of a paragraph spread over the document.
    const edited = Math.floor(((round + 0.5) * PARAGRAPHS) / ROUNDS);
    const words = current[edited].split(' ');
    words.splice(words.length >> 1, 0, `(Edited in round ${round}.)`);
    current[edited] = words.join(' ');
    const version = current.join('\n\n');

    await call('PUT', `/v1/datasets/${dataset.id}/documents/${created.document_id}`, { content: version });
    const replaced = await ready(dataset.id, created.document_id);
    const upload = await call('POST', `/v1/datasets/${dataset.id}/documents`, { content: version });
    const uploaded = await ready(dataset.id, upload.document_id);
    await call('DELETE', `/v1/datasets/${dataset.id}/documents/${upload.document_id}`);
    const figures = {
      edited_paragraph: edited,
      chunks: replaced.chunks_created,
      replace: {
        embedded: replaced.chunks_embedded,
        reused: replaced.chunks_reused,
        processing_ms: replaced.processing_time_ms,
      },
      upload: { embedded: uploaded.chunks_embedded, processing_ms: uploaded.processing_time_ms },
      embedded_share: replaced.chunks_embedded / replaced.chunks_created,
      time_ratio: replaced.processing_time_ms / uploaded.processing_time_ms,
    };
    result.rounds.push(figures);
    console.log(JSON.stringify(figures));
  }
  result.median = {
    replace_embedded: median(result.rounds.map((r) => r.replace.embedded)),
    replace_ms: median(result.rounds.map((r) => r.replace.processing_ms)),
    upload_ms: median(result.rounds.map((r) => r.upload.processing_ms)),
    embedded_share: median(result.rounds.map((r) => r.embedded_share)),
    time_ratio: median(result.rounds.map((r) => r.time_ratio)),
  };
  console.log(JSON.stringify(result.median, null, 2));
  console.log(`written to ${writeResult('documents', result)}`);
} finally {
  await server.stop();
  await database.drop();
}
