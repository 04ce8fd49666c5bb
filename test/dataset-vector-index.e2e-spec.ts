import { createDataset, ingest } from './utils/documents.js';
import { bearer, startTestApp, type TestApp } from './utils/test-app.js';

const THRESHOLD = 5;
const SENTENCES = [
  'Mitochondria produce most of the energy of the cell.',
  'Plants store energy as starch in their roots.',
  'The cell membrane keeps the inside of the cell apart.',
  'Ribosomes read messenger RNA to build proteins.',
  'Chloroplasts turn sunlight into sugar.',
  'Enzymes speed up the reactions of the cell.',
];

/** Polls `check` every 100 ms until it holds, for up to `timeoutMs`. */
async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('Per-dataset vector indexes (SEARCH_DATASET_INDEX_MIN_CHUNKS)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      EMBEDDING_PROVIDER: 'local',
      EMBEDDING_MODEL: 'synthetic/bert-L6-H384',
      SEARCH_DATASET_INDEX_MIN_CHUNKS: String(THRESHOLD),
      // Every search walks an index first, so that the dataset's own is what is searched.
      SEARCH_EXACT_SCAN_MAX_CHUNKS: '0',
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  const indexesOf = async (datasetSeq: string) =>
    (
      await t.sql.query<{ name: string }>(
        `SELECT indexname AS name FROM pg_indexes WHERE tablename = 'chunks' AND indexname LIKE $1`,
        [`chunks\\_embedding\\_%\\_ds${datasetSeq}\\_idx`],
      )
    ).rows.map((row) => row.name);

  it('builds the index of a dataset past the threshold, searches with it, and drops it with the dataset', async () => {
    const key = await t.createApiKey();
    const large = await createDataset(t.http, key);
    const small = await createDataset(t.http, key);
    const seqOf = async (id: string) =>
      (await t.sql.query<{ seq: string }>('SELECT seq::text FROM datasets WHERE id = $1', [id])).rows[0].seq;
    const [largeSeq, smallSeq] = [await seqOf(large), await seqOf(small)];

    await ingest(t, key, small, [{ content: SENTENCES[0] }]);
    await ingest(
      t,
      key,
      large,
      SENTENCES.map((content) => ({ content })),
    );
    const own = `chunks_embedding_384_ds${largeSeq}_idx`;
    await until(async () => {
      const { rows } = await t.sql.query<{ dims: number | null }>(
        'SELECT vector_index_dimensions AS dims FROM dataset_index WHERE dataset_id = $1',
        [large],
      );
      return rows[0].dims === 384;
    }, 'the dataset records its index');
    expect(await indexesOf(largeSeq)).toEqual([own]);
    const { rows: valid } = await t.sql.query<{ valid: boolean }>(
      'SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass($1)',
      [own],
    );
    expect(valid).toEqual([{ valid: true }]);
    expect(await indexesOf(smallSeq)).toEqual([]);

    const search = (datasetId: string, query: string) =>
      t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, query, mode: 'semantic', limit: 10, explain: true })
        .expect(200);
    const found = (await search(large, SENTENCES[3])).body as {
      results: { content: string; semantic_score: number }[];
    };
    expect(found.results[0].content).toBe(SENTENCES[3]);
    expect(found.results[0].semantic_score).toBeGreaterThan(0.9999);
    expect(found.results).toHaveLength(SENTENCES.length);
    const other = (await search(small, SENTENCES[0])).body as { results: { content: string }[] };
    expect(other.results.map((result) => result.content)).toEqual([SENTENCES[0]]);

    await t.http.delete(`/v1/datasets/${large}`).set(bearer(key)).expect(204);
    await until(async () => (await indexesOf(largeSeq)).length === 0, 'the index is dropped');
    const { rows: shared } = await t.sql.query(
      `SELECT FROM pg_indexes WHERE indexname = 'chunks_embedding_384_idx'`,
    );
    expect(shared).toHaveLength(1);
  });
});
