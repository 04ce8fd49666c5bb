// LanceDB's hybrid search as `bench/search.mjs` asks it, in process and (through bench/lancedb-server.mjs)
// over HTTP: one definition, so that every way of asking LanceDB does the same work.
import * as lancedb from '@lancedb/lancedb';
import { env, pipeline } from '@huggingface/transformers';

/**
 * `search(text, { depth, where })` over the table `chunks` in `dir`: the query embedded as the service
 * embeds it (the same model on one ONNX thread; a pool of two keeps spinning after each run, which
 * would also slow the service's next query), LanceDB's FTS and vector legs fused by RRF (k = 60), the
 * first 5 kept. Without `depth`, LanceDB's defaults: each leg fetches only `limit` (5) candidates, the
 * HNSW search with ef = 1.5 x limit. With `depth` (50), each leg's best 50 and ef 50, as our fusion
 * and ef_search take them: the same work and the same answer as ours.
 */
export async function lanceSearch({ dir, modelsDir, model }) {
  env.localModelPath = modelsDir;
  env.allowRemoteModels = false;
  const extractor = await pipeline('feature-extraction', model, {
    dtype: 'q8',
    session_options: { intraOpNumThreads: 1 },
  });
  const table = await (await lancedb.connect(dir)).openTable('chunks');
  const rrf = await lancedb.rerankers.RRFReranker.create(60);
  return async (text, { depth, where } = {}) => {
    const vector = (await extractor([text], { pooling: 'cls', normalize: true })).tolist()[0];
    let query = table.query().fullTextSearch(text).nearestTo(vector).rerank(rrf);
    query = depth ? query.limit(depth).ef(depth) : query.limit(5);
    if (where) query = query.where(where);
    return (await query.toArray()).slice(0, 5);
  };
}
