// LanceDB as a search service: the bench's LanceDB table behind the least an HTTP service can be (node:http,
// one JSON route, no authentication, rate limit or validation), for `bench/search.mjs` to compare with our
// service over the same kind of connection. Started by the bench as a child process:
//   LANCE_DIR=… MODELS_DIR=… MODEL=… node bench/lancedb-server.mjs   → prints {"port": …} once listening
// POST /query {"query": "…", "depth": 50?, "where": "category = 'c1'"?} → {"results": [{"id", "text", "score"}]}
import http from 'node:http';
import { lanceSearch } from './lancedb-search.mjs';

const lance = await lanceSearch({
  dir: process.env.LANCE_DIR,
  modelsDir: process.env.MODELS_DIR,
  model: process.env.MODEL,
});

async function search({ query, depth, where }) {
  return (await lance(query, { depth, where })).map((row) => ({
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
