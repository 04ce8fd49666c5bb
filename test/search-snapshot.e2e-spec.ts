import pg from 'pg';
import { withDeadline } from 'src/common/async/deadline.js';
import { ChunkReadsRepository } from 'src/modules/chunk-index/chunk-reads.repository.js';
import { PostingsRepository } from 'src/modules/chunk-index/postings.repository.js';
import type { Bm25Parameters } from 'src/modules/search/bm25.js';
import { parseFilters } from 'src/modules/search/filters.js';
import { KeywordLeg } from 'src/modules/search/keyword-leg.js';
import { PostingsCache } from 'src/modules/search/postings-cache.js';
import type { LegRequest } from 'src/modules/search/search.types.js';
import { SearchPool } from 'src/modules/search/search-pool.js';
import { SearchReads } from 'src/modules/search/search-reads.js';
import { VectorLeg } from 'src/modules/search/vector-leg.js';
import { addDocument, createDataset } from './utils/documents.js';
import { bearer, type CreatedKey, startTestApp, type TestApp } from './utils/test-app.js';
import { until } from './utils/until.js';

/** A leg's request with its filters as a client sends them. */
type RawLegRequest = Omit<LegRequest, 'filter'> & { filters: unknown };

/** Both legs of search over `search`'s connections, as the search module wires them. */
function legsOver(search: SearchPool, cache: PostingsCache, timeoutMs = 10_000) {
  const reads = new SearchReads(search, { timeoutMs });
  const chunkReads = new ChunkReadsRepository();
  const keywordLeg = new KeywordLeg(reads, new PostingsRepository(), chunkReads, cache);
  const vectorLeg = new VectorLeg(
    reads,
    chunkReads,
    { semanticCalibrations: {} },
    { exactScanMaxChunks: 20_000 },
  );
  const parsed = ({ filters, ...request }: RawLegRequest): LegRequest => ({
    ...request,
    filter: parseFilters(filters),
  });
  return {
    keyword: (
      dataset: { id: string; seq: string; language: string; chunkCount: number },
      query: string,
      bm25: Bm25Parameters,
      request: RawLegRequest,
    ) => keywordLeg.rank(dataset, query, bm25, parsed(request)),
    semantic: (
      dataset: { id: string; seq: string; chunks: number; dimensions: number; model: string },
      embedding: Promise<number[]>,
      request: RawLegRequest,
    ) => vectorLeg.rank(dataset, embedding, parsed(request)),
    warm: (budget: number, stop: () => boolean) => keywordLeg.warm(budget, stop),
  };
}
type Legs = ReturnType<typeof legsOver>;

/**
 * The keyword leg reads a term's version and, in a statement of its own, the postings it has not
 * kept in memory. When ingestion writes the term in between, the two statements see two states of the
 * dataset: the leg must notice and rank again in one snapshot. Here a write is slipped in between
 * them, on the real database, at exactly that point.
 */
describe('Keyword leg across concurrent writes', () => {
  let t: TestApp;
  let key: CreatedKey;
  let pool: pg.Pool;
  let datasetId: string;
  let datasetSeq: string;
  /** The keyword leg of `legs` in the dataset: 5 candidates, all with their rows, unless `leg` says. */
  const keyword = (
    legs: Legs,
    query: string,
    {
      id = datasetId,
      seq = datasetSeq,
      chunkCount = 3,
      ...leg
    }: Partial<RawLegRequest> & { id?: string; seq?: string; chunkCount?: number } = {},
  ) =>
    legs.keyword(
      { id, seq, language: 'english', chunkCount },
      query,
      { k1: 1.2, b: 0.75 },
      {
        filters: {},
        candidates: 5,
        shown: 5,
        ...leg,
      },
    );

  /** The model the tests below give the dataset's vectors (the service runs keyword-only). */
  const MODEL = 'test-model';
  /** The dataset as the vector leg is given it: `chunks` of three dimensions, embedded by MODEL. */
  const vectorDataset = (chunks: number) => ({
    id: datasetId,
    seq: datasetSeq,
    chunks,
    dimensions: 3,
    model: MODEL,
  });

  beforeAll(async () => {
    t = await startTestApp({ EMBEDDING_PROVIDER: 'none' });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    for (const content of [
      'Mitochondria produce energy for the cell.',
      'The cell membrane keeps the cell together.',
      'Plants store energy as starch.',
    ]) {
      await addDocument(t.http, key, datasetId, { content });
    }
    const [row] = (await t.sql.query<{ seq: string }>('SELECT seq FROM datasets WHERE id = $1', [datasetId]))
      .rows;
    datasetSeq = row.seq;
    pool = new pg.Pool({ connectionString: t.database.url, max: 2 });
  });
  afterAll(async () => {
    await pool.end();
    await t.close();
  });

  /**
   * A repository whose statements go through `pool`, with `before` run ahead of the n-th statement.
   * Statements are counted outside and inside transactions alike; a transaction by its BEGIN.
   */
  function repository(before?: { statement: number; run: () => Promise<unknown> }) {
    let statements = 0;
    let transactions = 0;
    const texts: string[] = [];
    const spied = Object.create(pool) as pg.Pool;
    spied.connect = (async () => {
      const client = await pool.connect();
      const query = client.query.bind(client) as (text: string, values?: unknown[]) => Promise<unknown>;
      const watched = Object.create(client) as pg.PoolClient;
      watched.query = (async (text: string, values?: unknown[]) => {
        if (text.startsWith('BEGIN')) transactions++;
        else if (!/^(COMMIT|ROLLBACK)$/.test(text)) {
          texts.push(text);
          if (++statements === before?.statement) await before.run();
        }
        return query(text, values);
      }) as pg.PoolClient['query'];
      return watched;
    }) as pg.Pool['connect'];
    const cache = new PostingsCache(1_000_000);
    return {
      cache,
      repository: legsOver({ pool: spied } as SearchPool, cache),
      counts: () => ({ statements, transactions }),
      texts: () => texts,
    };
  }

  it('ranks in one snapshot when a term moved on between its version and its postings', async () => {
    const quiet = repository();
    const expected = await keyword(quiet.repository, 'cell energy');
    expect(expected.length).toBe(3);
    // Without interference: one statement for the terms, one for their postings, one for the rows.
    expect(quiet.counts()).toEqual({ statements: 3, transactions: 0 });

    const bumpVersion = () =>
      t.sql.query(`UPDATE term_stats SET version = version + 1 WHERE dataset_seq = $1 AND term = 'cell'`, [
        datasetSeq,
      ]);
    const raced = repository({ statement: 2, run: bumpVersion });
    const hits = await keyword(raced.repository, 'cell energy');
    expect(hits.map(({ chunkSeq, score }) => [chunkSeq, score])).toEqual(
      expected.map(({ chunkSeq, score }) => [chunkSeq, score]),
    );
    expect(hits.map(({ row }) => row?.content)).toEqual(expected.map(({ row }) => row?.content));
    expect(raced.counts().transactions).toBe(1);
    // The postings kept are those of the version the snapshot saw, not the one before it.
    const [{ version }] = (
      await t.sql.query<{ version: string }>(
        `SELECT version::text FROM term_stats WHERE dataset_seq = $1 AND term = 'cell'`,
        [datasetSeq],
      )
    ).rows;
    expect(raced.cache.get(datasetSeq, 'cell', version)).toBeDefined();
  });

  it('reads nothing but the terms and the rows once the postings are in memory', async () => {
    const warm = repository();
    await keyword(warm.repository, 'cell energy');
    await keyword(warm.repository, 'cell energy');
    expect(warm.counts()).toEqual({ statements: 5, transactions: 0 });
  });

  it('gives the vector leg its rows, with the metadata of the best `shown`', async () => {
    const unit = (x: number[]) => `[${x.map((y) => y / Math.hypot(...x)).join(',')}]`;
    const { rows } = await t.sql.query<{ seq: string }>(
      'SELECT seq FROM chunks WHERE dataset_seq = $1 ORDER BY seq',
      [datasetSeq],
    );
    // Chunk i points at angle i from the query's direction: the nearest first, in chunk order.
    await t.sql.query(
      `UPDATE chunks SET embedding = v.e::vector FROM unnest($1::bigint[], $2::text[]) AS v(seq, e) WHERE chunks.seq = v.seq`,
      [rows.map(({ seq }) => seq), rows.map((_, i) => unit([1, i * 0.3, 0.1]))],
    );
    await t.sql.query(`UPDATE dataset_index SET embedding_model = $2 WHERE dataset_seq = $1`, [
      datasetSeq,
      MODEL,
    ]);
    const { repository: legs } = repository();
    const hits = await legs.semantic(vectorDataset(3), Promise.resolve([1, 0, 0]), {
      filters: {},
      candidates: 50,
      shown: 2,
    });
    expect(hits.map(({ chunkSeq }) => chunkSeq)).toEqual(rows.map(({ seq }) => seq));
    expect(hits.map(({ row }) => row?.metadata)).toEqual([{}, {}, undefined]);
    expect(hits.every(({ row }) => row && row.content.length > 0 && row.documentId.startsWith('doc_'))).toBe(
      true,
    );
  });

  it('keeps the vector leg while a new generation is built, and gives it nothing once switched to another model', async () => {
    // Looked up before either happened: the statement itself must see that the vectors are not the query's.
    const search = () =>
      repository().repository.semantic(vectorDataset(3), Promise.resolve([1, 0, 0]), {
        filters: {},
        candidates: 50,
        shown: 2,
      });
    expect(await search()).toHaveLength(3);
    try {
      await t.sql.query(
        `UPDATE dataset_index SET next_embedding_model = 'another', next_embedding_dimensions = 3,
                reembed_requested_at = now() WHERE dataset_seq = $1`,
        [datasetSeq],
      );
      expect(await search()).toHaveLength(3);
      await t.sql.query(
        `UPDATE dataset_index SET next_embedding_model = NULL, next_embedding_dimensions = NULL,
                reembed_requested_at = NULL, embedding_model = 'another' WHERE dataset_seq = $1`,
        [datasetSeq],
      );
      expect(await search()).toEqual([]);
    } finally {
      await t.sql.query(
        `UPDATE dataset_index SET next_embedding_model = NULL, next_embedding_dimensions = NULL,
                reembed_requested_at = NULL, embedding_model = $2 WHERE dataset_seq = $1`,
        [datasetSeq, MODEL],
      );
    }
    expect(await search()).toHaveLength(3);
  });

  it('gives the keyword leg rows for its best `shown` only, with their metadata', async () => {
    const { repository: legs } = repository();
    const all = await keyword(legs, 'cell energy');
    const best = await keyword(legs, 'cell energy', { shown: 1 });
    expect(best.map(({ chunkSeq, score }) => [chunkSeq, score])).toEqual(
      all.map(({ chunkSeq, score }) => [chunkSeq, score]),
    );
    expect(best.map(({ row }) => row)).toEqual([all[0].row, undefined, undefined]);
    expect(all.every(({ row }) => row?.metadata !== undefined)).toBe(true);
  });

  it('scores the hits that pass a filter as the ranking scored them', async () => {
    const { repository: legs } = repository();
    const ranked = await keyword(legs, 'cell energy');
    // A filter every document passes: the hits come from the filter's check, in rank order.
    const filters = { kind: { $exists: false } };
    const checked = await keyword(legs, 'cell energy', { filters });
    expect(checked.map(({ chunkSeq, score }) => [chunkSeq, score])).toEqual(
      ranked.map(({ chunkSeq, score }) => [chunkSeq, score]),
    );
    expect(checked.every(({ row }) => row?.metadata !== undefined)).toBe(true);
  });

  it('ranks only the chunks passing a selective filter as checking the ranking would', async () => {
    const { repository: legs, texts } = repository();
    const [first] = (
      await t.sql.query<{ id: string }>(
        `SELECT id FROM documents WHERE dataset_id = $1 ORDER BY created_at, id LIMIT 1`,
        [datasetId],
      )
    ).rows;
    await t.sql.query(`UPDATE documents SET metadata = '{"kind": "chosen"}' WHERE id = $1`, [first.id]);
    try {
      const filters = { kind: 'chosen' };
      const passing = Promise.resolve({ documents: 1, chunks: 1 });
      // One chunk of three passes: too many for the set (1 in 16 at most), so the ranking is checked.
      const checked = await keyword(legs, 'cell energy', { filters, passing });
      const readsSet = () =>
        texts().some((text) =>
          text.includes('JOIN chunks c ON c.dataset_seq = d.dataset_seq AND c.document_id = d.id'),
        );
      expect(readsSet()).toBe(false);
      // One of a hundred: the leg ranks the chunks that pass, read first.
      const ranked = await keyword(legs, 'cell energy', { filters, passing, chunkCount: 100 });
      expect(readsSet()).toBe(true);
      const seqs = (
        await t.sql.query<{ seq: string }>('SELECT seq FROM chunks WHERE document_id = $1', [first.id])
      ).rows.map((row) => row.seq);
      expect(checked.map(({ chunkSeq }) => chunkSeq)).toEqual(seqs);
      expect(ranked.map(({ chunkSeq, score }) => [chunkSeq, score])).toEqual(
        checked.map(({ chunkSeq, score }) => [chunkSeq, score]),
      );
      expect(ranked[0].row?.metadata).toEqual({ kind: 'chosen' });
    } finally {
      await t.sql.query(`UPDATE documents SET metadata = '{}' WHERE id = $1`, [first.id]);
    }
  });

  it('ranks the passing chunks alone once a first check, without a count, finds too few', async () => {
    const id = await createDataset(t.http, key);
    try {
      // Twenty chunks hold the term, the fewer times the later; only the last passes the filter.
      for (let i = 0; i < 20; i++) {
        const content = `${'energy '.repeat(20 - i)}in the cell.`;
        await addDocument(t.http, key, id, { content, metadata: { kind: i === 19 ? 'chosen' : 'other' } });
      }
      const [{ seq }] = (await t.sql.query<{ seq: string }>('SELECT seq FROM datasets WHERE id = $1', [id]))
        .rows;
      const ask = { id, seq, chunkCount: 20, filters: { kind: 'chosen' }, candidates: 1, shown: 1 };
      const readsSet = (texts: string[]) =>
        texts.some((text) =>
          text.includes('JOIN chunks c ON c.dataset_seq = d.dataset_seq AND c.document_id = d.id'),
        );
      // Counted as many, the ranking is checked, and ranked deeper when the first 16 hold none.
      const counted = repository();
      const checked = await keyword(counted.repository, 'energy', {
        ...ask,
        passing: Promise.resolve({ documents: 20, chunks: 20 }),
      });
      expect(readsSet(counted.texts())).toBe(false);
      // Without a count, the first check's 16 chunks hold none: the leg reads the passing ones.
      const uncounted = repository();
      const ranked = await keyword(uncounted.repository, 'energy', ask);
      expect(readsSet(uncounted.texts())).toBe(true);
      expect(ranked.map(({ chunkSeq, score }) => [chunkSeq, score])).toEqual(
        checked.map(({ chunkSeq, score }) => [chunkSeq, score]),
      );
      expect(ranked).toHaveLength(1);
      expect(ranked[0].row?.metadata).toEqual({ kind: 'chosen' });
    } finally {
      await t.http.delete(`/v1/datasets/${id}`).set(bearer(key)).expect(204);
    }
  });

  it('keeps the rank of a hit deleted before its row is read, without the row', async () => {
    // A dataset of its own, deleted at the end: the warm-up below counts every dataset's postings.
    const datasetId = await createDataset(t.http, key);
    try {
      await deletedBeforeItsRow(datasetId);
    } finally {
      await t.http.delete(`/v1/datasets/${datasetId}`).set(bearer(key)).expect(204);
    }
  });

  async function deletedBeforeItsRow(datasetId: string) {
    for (const content of ['The cell divides.', 'A cell inside another cell.', 'Cells, cells and cells.']) {
      await addDocument(t.http, key, datasetId, { content });
    }
    const [{ seq }] = (
      await t.sql.query<{ seq: string }>('SELECT seq FROM datasets WHERE id = $1', [datasetId])
    ).rows;
    const quiet = await keyword(repository().repository, 'cell', { seq });
    expect(quiet).toHaveLength(3);
    // The best hit's document is deleted after the terms and their postings are read, before the rows.
    const deleted = quiet[0].row!.documentId;
    const raced = repository({
      statement: 3,
      run: () => t.http.delete(`/v1/datasets/${datasetId}/documents/${deleted}`).set(bearer(key)).expect(204),
    });
    const hits = await keyword(raced.repository, 'cell', { seq });
    expect(hits.map(({ chunkSeq, score }) => [chunkSeq, score])).toEqual(
      quiet.map(({ chunkSeq, score }) => [chunkSeq, score]),
    );
    expect(hits.map(({ row }) => row?.content)).toEqual([
      undefined,
      quiet[1].row!.content,
      quiet[2].row!.content,
    ]);
  }

  it('walks the HNSW index or scans the rows by what each costs, counting the index from the datasets', async () => {
    // The dataset's chunks stand for 1,600 of three dimensions; its vectors are those of the test above.
    const walks = async (chunks: number) => {
      const { repository: legs, texts } = repository(); // a fresh count of the index
      await legs.semantic(vectorDataset(chunks), Promise.resolve([1, 0, 0]), {
        filters: {},
        candidates: 50,
        shown: 5,
      });
      return texts().some((text) => text.includes('::halfvec(3)) <=>'));
    };
    const [dataset] = (
      await t.sql.query(
        `SELECT s.account_id, i.chunk_count, i.embedding_dimensions
           FROM datasets s JOIN dataset_index i ON i.dataset_seq = s.seq WHERE s.seq = $1`,
        [datasetSeq],
      )
    ).rows;
    await t.sql.query(
      'UPDATE dataset_index SET embedding_dimensions = 3, chunk_count = 1600 WHERE dataset_seq = $1',
      [datasetSeq],
    );
    try {
      expect(await walks(1_600)).toBe(true); // the index to itself: scanning 1,600 rows costs more
      expect(await walks(1_000)).toBe(false);
      // Another dataset of the dimension, of a million chunks: the walk would pass 625 of them for each.
      await t.sql.query(
        `WITH dataset AS (
           INSERT INTO datasets (id, account_id, name) VALUES ('ds_sharing00000000000000', $1, 'sharing')
           RETURNING seq, id
         )
         INSERT INTO dataset_index (dataset_seq, dataset_id, embedding_model, embedding_dimensions, chunk_count)
         SELECT seq, id, 'fake', 3, 1000000 FROM dataset`,
        [dataset.account_id],
      );
      expect(await walks(1_600)).toBe(false);
    } finally {
      await t.sql.query(`DELETE FROM datasets WHERE id = 'ds_sharing00000000000000'`);
      await t.sql.query(
        'UPDATE dataset_index SET embedding_dimensions = $2, chunk_count = $3 WHERE dataset_seq = $1',
        [datasetSeq, dataset.embedding_dimensions, dataset.chunk_count],
      );
    }
  });

  it('runs on connections that carry the search settings', async () => {
    const search = new SearchPool({ timeoutMs: 1234, poolSize: 1 }, { url: t.database.url }, {
      warn: () => undefined,
    } as never);
    try {
      const show = async (name: string) =>
        (await search.pool.query<Record<string, string>>(`SHOW ${name}`)).rows[0][name];
      expect(await show('statement_timeout')).toBe('1234ms');
      expect(await show('default_transaction_read_only')).toBe('on');
      expect(await show('jit')).toBe('off');
      expect(await show('hnsw.iterative_scan')).toBe('relaxed_order');
      expect(await show('hnsw.ef_search')).toBe('50');
    } finally {
      await search.onApplicationShutdown();
    }
  });

  it('waits for a free connection no longer than the search timeout', async () => {
    const search = new SearchPool({ timeoutMs: 300, poolSize: 1 }, { url: t.database.url }, {
      warn: () => undefined,
    } as never);
    // Making the connection to hold is set-up, not what is tested: on a busy machine it can take
    // longer than the 300 ms the pool allows, so it is tried again.
    let held: pg.PoolClient | undefined;
    for (let attempt = 1; !held; attempt++) {
      held = await search.pool.connect().catch((error: unknown) => {
        if (attempt === 5) throw error;
        return undefined;
      });
    }
    try {
      const started = performance.now();
      const waited = search.pool.connect().then(
        (client) => {
          client.release();
          return 'connected';
        },
        (error: Error) => error.message,
      );
      // Within the test's time: the pool waits no longer than the search timeout, not a fixed 10 s.
      expect(await withDeadline(waited, 3_000, () => new Error('still waiting'))).toMatch(/timeout/);
      expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    } finally {
      held.release();
      await search.onApplicationShutdown();
    }
  });

  describe('at the deadline', () => {
    /** This database's search statements waiting for a lock: their backends. */
    const waiting = async () =>
      (
        await t.sql.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'dataset-search/search'
              AND state = 'active' AND wait_event_type = 'Lock'`,
        )
      ).rows.map(({ pid }) => pid);
    const backendAlive = async (pid: number) =>
      (await t.sql.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rows.length > 0;

    it.each([
      ['a statement on its own', {}],
      ['a statement of a transaction (the leg under a filter)', { n: { $exists: false } }],
    ])('cancels %s in PostgreSQL and closes its connection', async (_case, filters) => {
      // A statement timeout far beyond the test's: only the cancellation can end the statement in time.
      const search = new SearchPool({ timeoutMs: 60_000, poolSize: 2 }, { url: t.database.url }, {
        warn: () => undefined,
      } as never);
      const legs = legsOver(search, new PostingsCache(1_000_000), 60_000);
      const blocker = await t.sql.connect();
      try {
        await blocker.query('BEGIN; LOCK TABLE chunks IN ACCESS EXCLUSIVE MODE');
        const deadline = new AbortController();
        const leg = keyword(legs, 'cell energy', { filters, deadline: deadline.signal });
        const outcome = leg.then(
          () => 'answered',
          (error: unknown) => error,
        );
        let blocked: number[] = [];
        await until(async () => (blocked = await waiting()).length > 0);
        deadline.abort(new Error('deadline'));
        const settled = await withDeadline(outcome, 5_000, () => new Error('the statement is still running'));
        expect(settled).toMatchObject({ code: 'query_timeout' });
        expect(await waiting()).toEqual([]);
        await until(async () => !(await backendAlive(blocked[0])));
      } finally {
        blocker.release(true);
        await search.onApplicationShutdown();
      }
    });
  });

  describe('warm-up', () => {
    const versionOf = async (term: string) =>
      (
        await t.sql.query<{ version: string }>(
          'SELECT version::text FROM term_stats WHERE dataset_seq = $1 AND term = $2',
          [datasetSeq, term],
        )
      ).rows[0].version;

    it('reads the most frequent terms first, within its budget', async () => {
      // Stemmed, `cell` and `energi` are in two chunks each, every other term in one.
      const { cache, repository: warmed } = repository();
      expect(await warmed.warm(2, () => false)).toBe(2);
      expect(cache.get(datasetSeq, 'cell', await versionOf('cell'))?.chunks).toHaveLength(2);
      expect(cache.get(datasetSeq, 'energi', await versionOf('energi'))).toBeUndefined();
      expect(cache.get(datasetSeq, 'starch', await versionOf('starch'))).toBeUndefined();
    });

    it('then leaves a query nothing to read but its terms and its rows', async () => {
      const { repository: warmed, counts } = repository();
      const expected = await keyword(repository().repository, 'cell energy');
      expect(await warmed.warm(1_000, () => false)).toBe(12);
      const before = counts().statements;
      const hits = await keyword(warmed, 'cell energy');
      expect(counts().statements - before).toBe(2);
      expect(hits.map(({ chunkSeq, score }) => [chunkSeq, score])).toEqual(
        expected.map(({ chunkSeq, score }) => [chunkSeq, score]),
      );
    });

    it('stops when told to', async () => {
      const { cache, repository: warmed } = repository();
      expect(await warmed.warm(1_000, () => true)).toBe(0);
      expect(cache.size).toBe(0);
    });
  });
});
