import { readFile } from 'node:fs/promises';
import { createDataset } from './utils/documents.js';
import { bearer, type CreatedKey, startProcess, startTestApp, type TestApp } from './utils/test-app.js';
import { until } from './utils/until.js';

const FIXTURES = '../shared/fixtures';
const NDJSON = 'application/x-ndjson';

/** Words that repeat across documents, so that concurrent writers keep meeting on the same terms. */
const WORDS = 'heron river stone lantern orchard copper meadow signal harbor velvet canyon ember'.split(' ');

/** A document of a few sentences drawn from WORDS by a seed: the same seed, the same text. */
function text(seed: number): string {
  const sentences: string[] = [];
  for (let s = 0; s < 3 + (seed % 4); s++) {
    const words = Array.from({ length: 6 }, (_, w) => WORDS[(seed * 7 + s * 5 + w * 3) % WORDS.length]);
    sentences.push(`${words.join(' ')} number${seed % 50}.`);
  }
  return sentences.join(' ');
}

/**
 * Ingestion by two worker processes of two bulk uploads into one dataset at once, with deletions and
 * reprocessing meanwhile and documents that fail: each document ends as it should, and the dataset's
 * BM25 statistics equal a recount from its chunks and postings.
 */
describe('Concurrent bulk ingestion into one dataset', () => {
  let t: TestApp;
  let key: CreatedKey;
  const workers: { stop(): Promise<void> }[] = [];

  beforeAll(async () => {
    t = await startTestApp({ ROLE: 'api' });
    for (let i = 0; i < 2; i++)
      workers.push(
        await startProcess(t, { ROLE: 'worker', INGEST_CONCURRENCY: '16' }, 'ingestion worker started'),
      );
    key = await t.createApiKey();
  });
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await t?.close();
  });

  it('keeps every document and the statistics exact', async () => {
    const datasetId = await createDataset(t.http, key);
    const encrypted = (await readFile(`${FIXTURES}/pdf/encrypted-password.pdf`)).toString('base64');
    const body = (first: number) =>
      Array.from({ length: 150 }, (_, i) =>
        JSON.stringify(
          i % 50 === 49
            ? { filename: `locked-${first + i}.pdf`, content_base64: encrypted }
            : { content: text(first + i), metadata: { n: first + i } },
        ),
      ).join('\n');
    const bulk = (first: number) =>
      t.http
        .post(`/v1/datasets/${datasetId}/documents/bulk`)
        .set(bearer(key))
        .set('Content-Type', NDJSON)
        .send(body(first))
        .expect(200);
    const answers = await Promise.all([bulk(0), bulk(1_000)]);
    const ids = answers.flatMap((answer) =>
      (answer.body.results as { document: { document_id: string } }[]).map((r) => r.document.document_id),
    );
    expect(ids).toHaveLength(300);

    // While the workers index: some documents deleted, some reprocessed once ready.
    const deleted = ids.filter((_, i) => i % 37 === 5);
    await Promise.all(
      deleted.map((id) =>
        t.http.delete(`/v1/datasets/${datasetId}/documents/${id}`).set(bearer(key)).expect(204),
      ),
    );
    const statusOf = async () =>
      new Map(
        (
          await t.sql.query<{ id: string; status: string }>(
            `SELECT id, status FROM documents WHERE dataset_id = $1`,
            [datasetId],
          )
        ).rows.map((row) => [row.id, row.status]),
      );
    const reprocessed = ids.filter((id, i) => i % 41 === 7 && !deleted.includes(id));
    await until(async () => {
      const status = await statusOf();
      return reprocessed.every((id) => status.get(id) === 'ready');
    }, 120_000);
    for (const id of reprocessed) {
      await t.http.post(`/v1/datasets/${datasetId}/documents/${id}/reprocess`).set(bearer(key)).expect(200);
    }
    await until(async () => ![...(await statusOf()).values()].includes('processing'), 120_000);

    const status = await statusOf();
    const kept = ids.filter((id) => !deleted.includes(id));
    expect(status.size).toBe(kept.length);
    const failed = ids.filter((_, i) => i % 150 === 49 || i % 150 === 99 || i % 150 === 149);
    for (const id of kept)
      expect([id, status.get(id)]).toEqual([id, failed.includes(id) ? 'failed' : 'ready']);

    const { rows } = await t.sql.query(
      `SELECT (SELECT count(*)::int FROM term_stats t
                WHERE t.dataset_seq = i.dataset_seq
                  AND t.df <> (SELECT count(*) FROM chunk_terms p
                                WHERE p.dataset_seq = t.dataset_seq AND p.term = t.term)) AS wrong_df,
              (SELECT count(*)::int FROM chunk_terms p WHERE p.dataset_seq = i.dataset_seq
                  AND NOT EXISTS (SELECT 1 FROM term_stats t WHERE t.dataset_seq = p.dataset_seq AND t.term = p.term))
                AS uncounted_terms,
              (SELECT count(*)::int FROM chunk_terms p
                WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.seq = p.chunk_seq)) AS orphan_postings,
              i.chunk_count::int AS chunk_count,
              (SELECT count(*)::int FROM chunks WHERE dataset_seq = i.dataset_seq) AS chunks,
              i.total_chunk_length::int AS total,
              (SELECT coalesce(sum(length), 0)::int FROM chunks WHERE dataset_seq = i.dataset_seq) AS lengths,
              (SELECT count(*)::int FROM documents d WHERE d.dataset_id = i.dataset_id AND d.status = 'ready'
                  AND d.chunks_created <> (SELECT count(*) FROM chunks c WHERE c.document_id = d.id)) AS wrong_counts
         FROM dataset_index i WHERE i.dataset_id = $1`,
      [datasetId],
    );
    expect(rows[0]).toEqual({
      wrong_df: 0,
      uncounted_terms: 0,
      orphan_postings: 0,
      chunk_count: rows[0].chunks,
      chunks: expect.any(Number),
      total: rows[0].lengths,
      lengths: expect.any(Number),
      wrong_counts: 0,
    });
    expect(rows[0].chunks).toBeGreaterThan(0);

    // One document.processed event per run that ended ready: the reprocessed documents have two.
    const { rows: events } = await t.sql.query<{ resource_id: string; n: number }>(
      `SELECT resource_id, count(*)::int AS n FROM events WHERE event = 'document.processed'
        AND data->>'dataset_id' = $1 GROUP BY resource_id`,
      [datasetId],
    );
    const processed = new Map(events.map((row) => [row.resource_id, row.n]));
    for (const id of kept.filter((id) => !failed.includes(id)))
      expect([id, processed.get(id)]).toEqual([id, reprocessed.includes(id) ? 2 : 1]);

    // Runs were indexed together: documents made ready in one transaction share its id.
    const { rows: transactions } = await t.sql.query<{ documents: number; transactions: number }>(
      `SELECT count(*)::int AS documents, count(DISTINCT xmin::text)::int AS transactions
         FROM documents WHERE dataset_id = $1 AND status = 'ready' AND NOT (id = ANY($2::text[]))`,
      [datasetId, reprocessed],
    );
    expect(transactions[0].transactions).toBeLessThan(transactions[0].documents);
  });
});
