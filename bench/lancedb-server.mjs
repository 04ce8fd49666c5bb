// LanceDB as a search service: the bench's LanceDB table behind the least an HTTP service can be (node:http,
// one JSON route, no authentication, rate limit or validation), for `bench/search.mjs` to compare with our
// service over the same kind of connection. Started by the bench as a child process:
//   LANCE_DIR=… MODELS_DIR=… MODEL=… node bench/lancedb-server.mjs   → prints {"port": …} once listening
// POST /query {"query": "…", "depth": 50?, "where": "category = 'c1'"?} → {"results": [{"id", "text", "score"}]}
import http from 'node:http';
import * as lancedb from '@lancedb/lancedb';
import { env, pipeline } from '@huggingface/transformers';

env.localModelPath = process.env.MODELS_DIR;
env.allowRemoteModels = false;
// The query embedding as the service and the in-process bench run it: the same model, one ONNX thread.
const extractor = await pipeline('feature-extraction', process.env.MODEL, {
  dtype: 'q8',
  session_options: { intraOpNumThreads: 1 },
});
const table = await (await lancedb.connect(process.env.LANCE_DIR)).openTable('chunks');
const rrf = await lancedb.rerankers.RRFReranker.create(60);

async function search({ query, depth, where }) {
  const vector = (await extractor([query], { pooling: 'cls', normalize: true })).tolist()[0];
  let q = table.query().fullTextSearch(query).nearestTo(vector).rerank(rrf);
  q = depth ? q.limit(depth).ef(depth) : q.limit(5);
  if (where) q = q.where(where);
  return (await q.toArray()).slice(0, 5).map((row) => ({
    id: row.id,
    text: row.text,
    score: row._relevance_score,
  }));
}

const server = http.createServer((request, response) => {
  const parts = [];
  request.on('data', (part) => parts.push(part));
  request.on('end', () => {
    search(JSON.parse(Buffer.concat(parts).toString())).then(
      (results) => {
        response.writeHead(200, { 'Content-Type': 'application/json' });
        response.end(JSON.stringify({ results }));
      },
      (error) => {
        response.writeHead(500, { 'Content-Type': 'application/json' });
        response.end(JSON.stringify({ error: String(error) }));
      },
    );
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
process.on('SIGTERM', () => process.exit(0));
