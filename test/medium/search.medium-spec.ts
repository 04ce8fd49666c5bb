import type { Read } from 'src/database/read.js';
import { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import { ChunkReadsRepository } from 'src/modules/chunk-index/chunk-reads.repository.js';
import { PostingsRepository } from 'src/modules/chunk-index/postings.repository.js';
import { documentCondition, parseFilters } from 'src/modules/search/filters.js';
import { SearchPool } from 'src/modules/search/search-pool.js';
import { SearchReads } from 'src/modules/search/search-reads.js';
import {
  type DatasetRow,
  indexDocument,
  insertAccount,
  insertDataset,
  insertDocument,
  type MediumDatabase,
  openDatabase,
  target,
} from './fixtures.js';

const MODEL = 'test-model';
/** A unit vector at `angle` from the query's, [1, 0, 0]: its cosine distance is 1 - cos(angle). */
const at = (angle: number) => [Math.cos(angle), Math.sin(angle), 0];
const QUERY = at(0);

/**
 * The search reads against the real schema, over chunks written by `ChunkIndexRepository`:
 *
 * dataset `main` (3 dimensions, MODEL), 5 chunks of total length 20:
 * - document A, ready, {category: guide, year: 2020}: a0 (length 4, at 0.1), a1 (5, at 0.4)
 * - document B, ready, {category: note, year: 2021, tags: [biology]}: b0 (4, at 0.2), b1 (4, at 0.5)
 * - document C, processing a replacement, {category: guide, year: 2022}: c0 (3, no vector), of the
 *   version it replaces, which stays searchable
 * dataset `other` (3 dimensions, MODEL): e0 (4, at 0, nearer the query than any chunk of `main`)
 * dataset `wide` (4 dimensions): f0 (2)
 */
describe('Search reads', () => {
  let db: MediumDatabase;
  let search: SearchPool;
  let reads: SearchReads;
  const repository = new ChunkReadsRepository();
  /** The filters as the index's reads take them. */
  const where = (filters: unknown) => documentCondition(parseFilters(filters));
  const postings = new PostingsRepository();
  let main: DatasetRow;
  let other: DatasetRow;
  let wide: DatasetRow;
  const documents: Record<'A' | 'B' | 'C', string> = { A: '', B: '', C: '' };
  /** Chunks by name: their seq and id. */
  const chunks: Record<string, { seq: string; id: string }> = {};
  /** Chunks by name: their place in their document, as `chunksOf` lays them out. */
  const places: Record<string, { ordinal: number; page: null; charStart: number; charEnd: number }> = {};
  /** B was a file upload; A and C were sent as text. */
  const filenames = { A: null, B: 'starch-notes.md', C: null };
  const metadata = {
    A: { category: 'guide', year: 2020 },
    B: { category: 'note', year: 2021, tags: ['biology'] },
    C: { category: 'guide', year: 2022 },
  };
  const contents: Record<string, string> = {
    a0: 'Mitochondria produce energy for the cell.',
    a1: 'The cell membrane keeps the cell together.',
    b0: 'Plants store energy as starch.',
    b1: 'Starch is a carbohydrate kept in \uFB01les.',
    c0: 'Energy drinks are not for cells.',
    e0: 'The energy of a cell in another dataset.',
    f0: 'Four dimensions.',
  };
  const seq = (name: string) => Number(chunks[name].seq);

  beforeAll(async () => {
    db = await openDatabase();
    const config = { timeoutMs: 10_000, poolSize: 2 };
    search = new SearchPool(config, { url: db.database.url }, { warn: () => undefined } as never);
    reads = new SearchReads(search, config);
    const index = new ChunkIndexRepository(db.dataSource);
    await index.ensureVectorIndex(3);

    const account = await insertAccount(db.sql);
    main = await insertDataset(db.sql, account, { model: MODEL, dimensions: 3 });
    other = await insertDataset(db.sql, account, { model: MODEL, dimensions: 3 });
    wide = await insertDataset(db.sql, account, { model: 'wide-model', dimensions: 4 });
    const write = async (dataset: DatasetRow, names: string[], vectors: number[][] | null, meta = {}) => {
      const id = await insertDocument(db.sql, dataset.id, { metadata: meta });
      let at = 0;
      for (const [ordinal, name] of names.entries()) {
        places[name] = { ordinal, page: null, charStart: at, charEnd: at + contents[name].length };
        at += contents[name].length + 1;
      }
      await indexDocument(
        db.dataSource,
        index,
        target(dataset, id),
        names.map((name) => contents[name]),
        vectors,
      );
      await db.sql.query('UPDATE documents SET chunks_created = $2 WHERE id = $1', [id, names.length]);
      return id;
    };
    documents.A = await write(main, ['a0', 'a1'], [at(0.1), at(0.4)], metadata.A);
    documents.B = await write(main, ['b0', 'b1'], [at(0.2), at(0.5)], metadata.B);
    documents.C = await write(main, ['c0'], null, metadata.C);
    await db.sql.query(`UPDATE documents SET filename = $2 WHERE id = $1`, [documents.B, filenames.B]);
    // A document processing a new version, with the chunks of the one it replaces: searched as any.
    await db.sql.query(`UPDATE documents SET status = 'processing' WHERE id = $1`, [documents.C]);
    await write(other, ['e0'], [at(0)]);
    await write(wide, ['f0'], [[1, 0, 0, 0]]);
    const { rows } = await db.sql.query<{ seq: string; id: string; content: string }>(
      'SELECT seq::text, id, content FROM chunks',
    );
    for (const [name, content] of Object.entries(contents)) {
      const row = rows.find((r) => r.content === content)!;
      chunks[name] = { seq: row.seq, id: row.id };
    }
  });
  afterAll(async () => {
    await search?.onApplicationShutdown();
    await db?.close();
  });

  /** The row of a chunk as the repositories give it, without its document's fields. */
  const row = (name: string, document: keyof typeof documents) => ({
    seq: chunks[name].seq,
    id: chunks[name].id,
    content: contents[name],
    documentId: documents[document],
    ...places[name],
  });
  /** The row of a chunk with its document's fields. */
  const fullRow = (name: string, document: keyof typeof documents) => ({
    ...row(name, document),
    metadata: metadata[document],
    filename: filenames[document],
  });
  const versionOf = async (dataset: DatasetRow, term: string) =>
    (
      await db.sql.query<{ version: string }>(
        'SELECT version::text AS version FROM term_stats WHERE dataset_seq = $1 AND term = $2',
        [dataset.seq, term],
      )
    ).rows[0].version;
  /**
   * `work`'s reads on a connection of the search pool told to walk the HNSW index wherever it can
   * (over a few rows, PostgreSQL would rather sort them), with the plan of each statement it runs.
   */
  const withPlans = async <T>(work: (read: Read) => Promise<T>) => {
    const client = await search.pool.connect();
    try {
      await client.query('SET enable_seqscan = off; SET enable_sort = off');
      const plans: string[] = [];
      const read: Read = async <R>(text: string, values?: unknown[]) => {
        plans.push(JSON.stringify((await client.query(`EXPLAIN (FORMAT JSON) ${text}`, values)).rows));
        return (await client.query(text, values)).rows as R[];
      };
      return { hits: await work(read), plans };
    } finally {
      client.release(true);
    }
  };
  /** Runs `work` after the statement `change`, and `restore` after it, whatever its outcome. */
  const withChange = async <T>(
    change: string,
    restore: string,
    params: unknown[],
    work: () => Promise<T>,
  ) => {
    await db.sql.query(change, params);
    try {
      return await work();
    } finally {
      await db.sql.query(restore, params);
    }
  };

  describe('PostingsRepository', () => {
    it("gives the query's terms, stemmed, in term order, with their versions (null where the dataset holds none) and the dataset's N and total length", async () => {
      const read = reads.statements();
      expect(await postings.queryTerms(read, main.seq, 'english', 'How do cells make energy?')).toEqual([
        { term: 'cell', version: await versionOf(main, 'cell'), n: 5, total: 20, removed: '0' },
        { term: 'energi', version: await versionOf(main, 'energi'), n: 5, total: 20, removed: '0' },
        { term: 'make', version: null, n: 5, total: 20, removed: '0' },
      ]);
      expect(await postings.queryTerms(read, other.seq, 'english', 'cell membrane')).toEqual([
        { term: 'cell', version: await versionOf(other, 'cell'), n: 1, total: 4, removed: '0' },
        { term: 'membran', version: null, n: 1, total: 4, removed: '0' },
      ]);
      expect(await postings.queryTerms(read, main.seq, 'english', 'quantum entanglement')).toEqual([
        { term: 'entangl', version: null, n: 5, total: 20, removed: '0' },
        { term: 'quantum', version: null, n: 5, total: 20, removed: '0' },
      ]);
      expect(await postings.queryTerms(read, main.seq, 'english', 'the and of')).toEqual([]);
    });

    it("reads the query's words as the chunks' were read, whatever their Unicode form", async () => {
      const read = reads.statements();
      for (const query of ['files', '\uFB01les', '\uFF26\uFF29\uFF2C\uFF25\uFF33']) {
        expect((await postings.queryTerms(read, main.seq, 'english', query)).map(({ term }) => term)).toEqual(
          ['file'],
        );
      }
    });

    it('unpacks the postings of each term found, equal to its chunk_terms rows, at its version', async () => {
      const found = await postings.postings(reads.statements(), main.seq, ['cell', 'starch', 'absent']);
      const byTerm = Object.fromEntries(
        found.map(({ term, version, postings: p }) => [
          term,
          {
            version,
            // In chunk order: the order PostgreSQL hands them over in is not promised.
            postings: [...p.chunks]
              .map((chunk, i) => ({ chunk, tf: p.tf[i], length: p.length[i] }))
              .sort((x, y) => x.chunk - y.chunk),
          },
        ]),
      );
      expect(Object.keys(byTerm).sort()).toEqual(['cell', 'starch']);
      expect(byTerm.cell).toEqual({
        version: await versionOf(main, 'cell'),
        postings: [
          { chunk: seq('a0'), tf: 1, length: 4 },
          { chunk: seq('a1'), tf: 2, length: 5 },
          { chunk: seq('c0'), tf: 1, length: 3 },
        ].sort((x, y) => x.chunk - y.chunk),
      });
      // Against the table itself: every posting of the term, and no other dataset's.
      const { rows } = await db.sql.query<{ chunk: string; tf: number; length: number }>(
        `SELECT chunk_seq::text AS chunk, tf, length FROM chunk_terms
          WHERE dataset_seq = $1 AND term = 'starch' ORDER BY chunk_seq`,
        [main.seq],
      );
      expect(byTerm.starch.postings).toEqual(rows.map((r) => ({ ...r, chunk: Number(r.chunk) })));
      expect(rows.map(({ chunk }) => Number(chunk))).toEqual([seq('b0'), seq('b1')].sort((x, y) => x - y));
    });

    it('lists the terms held by the most chunks first, then by dataset and term', async () => {
      const frequent = await postings.mostFrequentTerms(reads.statements(), 100);
      const single = (dataset: DatasetRow, terms: string[]) =>
        terms.map((term) => ({ datasetSeq: dataset.seq, term, df: 1 }));
      expect(frequent).toEqual([
        { datasetSeq: main.seq, term: 'cell', df: 3 },
        { datasetSeq: main.seq, term: 'energi', df: 3 },
        { datasetSeq: main.seq, term: 'starch', df: 2 },
        ...single(main, [
          'carbohydr',
          'drink',
          'file',
          'keep',
          'kept',
          'membran',
          'mitochondria',
          'plant',
          'produc',
          'store',
          'togeth',
        ]),
        ...single(other, ['anoth', 'cell', 'dataset', 'energi']),
        ...single(wide, ['dimens', 'four']),
      ]);
      expect(await postings.mostFrequentTerms(reads.statements(), 2)).toEqual(frequent.slice(0, 2));
    });

    it('takes a term left at df 0 as one the dataset does not hold', async () => {
      await withChange(
        `INSERT INTO term_stats (dataset_seq, term, df) VALUES ($1, 'zombi', 0)`,
        `DELETE FROM term_stats WHERE dataset_seq = $1 AND term = 'zombi'`,
        [main.seq],
        async () => {
          const read = reads.statements();
          expect(await postings.queryTerms(read, main.seq, 'english', 'zombies')).toEqual([
            { term: 'zombi', version: null, n: 5, total: 20, removed: '0' },
          ]);
          const terms = (await postings.mostFrequentTerms(read, 100)).map(({ term }) => term);
          expect(terms).toHaveLength(20);
          expect(terms).not.toContain('zombi');
        },
      );
    });
  });

  describe('ChunkReadsRepository.chunks', () => {
    it("gives the dataset's chunks asked for, with their documents' metadata, by seq", async () => {
      const rows = await repository.chunks(reads.statements(), main.seq, [
        chunks.a0.seq,
        chunks.b1.seq,
        chunks.e0.seq,
      ]);
      expect(rows).toEqual(
        new Map([
          [chunks.a0.seq, fullRow('a0', 'A')],
          [chunks.b1.seq, fullRow('b1', 'B')],
        ]),
      );
      expect(await repository.chunks(reads.statements(), main.seq, [])).toEqual(new Map());
    });
  });

  describe('ChunkReadsRepository.passing', () => {
    /** b1, c0, a0, b0, a1: c0's document is processing a replacement, its chunks searchable. */
    const ranked = () => ['b1', 'c0', 'a0', 'b0', 'a1'].map(seq);
    const passing = (limit: number, filters?: unknown) =>
      repository.passing(reads.statements(), ranked(), limit, where(filters));
    const names = (rows: { seq: string; rank: number }[]) =>
      rows.map(({ seq: s, rank }) => [Object.keys(chunks).find((name) => chunks[name].seq === s), rank]);

    it("gives the chunks in rank order, whatever their document's status, each with its place in the list and its row", async () => {
      const rows = await passing(10);
      expect(names(rows)).toEqual([
        ['b1', 1],
        ['c0', 2],
        ['a0', 3],
        ['b0', 4],
        ['a1', 5],
      ]);
      expect(rows[2]).toEqual({ ...fullRow('a0', 'A'), rank: 3 });
      expect(rows[0]).toEqual({ ...fullRow('b1', 'B'), rank: 1 });
    });

    it('stops at the limit', async () => {
      expect(names(await passing(2))).toEqual([
        ['b1', 1],
        ['c0', 2],
      ]);
    });

    it('gives only the chunks whose document passes the filter', async () => {
      expect(names(await passing(10, { category: 'guide' }))).toEqual([
        ['c0', 2],
        ['a0', 3],
        ['a1', 5],
      ]);
      expect(names(await passing(10, { year: { $gte: 2021 } }))).toEqual([
        ['b1', 1],
        ['c0', 2],
        ['b0', 4],
      ]);
      expect(names(await passing(10, { tags: 'biology', year: { $lt: 2021 } }))).toEqual([]);
      expect(names(await passing(10, { $or: [{ tags: 'biology' }, { year: 2020 }] }))).toEqual([
        ['b1', 1],
        ['a0', 3],
        ['b0', 4],
        ['a1', 5],
      ]);
    });
  });

  describe('ChunkReadsRepository.nearest', () => {
    const query = (overrides: Partial<Parameters<ChunkReadsRepository['nearest']>[1]> = {}) => ({
      datasetSeq: main.seq,
      datasetId: main.id,
      model: MODEL,
      vector: QUERY,
      candidates: 10,
      shown: 2,
      condition: null as ReturnType<typeof where> | null,
      exact: true,
      ...overrides,
    });
    /**
     * `nearest` on a connection of the search pool told to walk the HNSW index wherever it can (over 4
     * rows, PostgreSQL would rather sort them), with the plan of each statement it runs.
     */
    const nearestWithPlans = (overrides: Parameters<typeof query>[0]) =>
      withPlans((read) => repository.nearest(read, query(overrides)));
    const named = (hits: { seq: string }[]) =>
      hits.map(({ seq: s }) => Object.keys(chunks).find((name) => chunks[name].seq === s));

    it.each([
      ['scanning the dataset', true],
      ['walking the HNSW index', false],
    ])(
      "gives the dataset's nearest chunks by cosine distance, %s, the first `shown` with metadata",
      async (_how, exact) => {
        const { hits, plans } = await nearestWithPlans({ exact });
        expect(hits).toEqual([
          { ...fullRow('a0', 'A'), distance: expect.any(Number), removed: '0' },
          { ...fullRow('b0', 'B'), distance: expect.any(Number), removed: '0' },
          { ...row('a1', 'A'), distance: expect.any(Number), removed: '0' },
          { ...row('b1', 'B'), distance: expect.any(Number), removed: '0' },
        ]);
        [0.1, 0.2, 0.4, 0.5].forEach((angle, i) =>
          expect(hits[i].distance).toBeCloseTo(1 - Math.cos(angle), 5),
        );
        expect(plans).toHaveLength(1);
        expect(plans[0].includes('chunks_embedding_3_idx')).toBe(!exact);
      },
    );

    it('looks up the documents of the first `shown` chunks only', async () => {
      const plans: unknown[] = [];
      const read: Read = async <T>(text: string, values?: unknown[]) => {
        const explained = await db.sql.query<{ 'QUERY PLAN': unknown }>(
          `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
          values,
        );
        plans.push(explained.rows[0]['QUERY PLAN']);
        return (await db.sql.query(text, values)).rows as T[];
      };
      await repository.nearest(read, query({ shown: 1 }));
      /** The nodes of a plan that read `documents`, with how often each ran and the rows it found. */
      const reads = (node: unknown): { loops: number; rows: number }[] => {
        const plan = node as { 'Relation Name'?: string; 'Actual Loops': number; 'Actual Rows': number };
        const children = (node as { Plans?: unknown[] }).Plans ?? [];
        const own =
          plan['Relation Name'] === 'documents'
            ? [{ loops: plan['Actual Loops'], rows: plan['Actual Rows'] }]
            : [];
        return [...own, ...children.flatMap(reads)];
      };
      expect(plans).toHaveLength(1);
      // One document read, once, for the four chunks found: the others' lookups never started.
      expect(reads((plans[0] as { Plan: unknown }[])[0].Plan)).toEqual([{ loops: 1, rows: 1 }]);
    });

    it('gives at most `candidates` chunks', async () => {
      expect(named(await repository.nearest(reads.statements(), query({ candidates: 3 })))).toEqual([
        'a0',
        'b0',
        'a1',
      ]);
    });

    it.each([true, false])(
      'gives only chunks of the documents passing the filter (exact: %s)',
      async (exact) => {
        const filtered = await nearestWithPlans({ exact, condition: where({ category: 'guide' }) });
        expect(named(filtered.hits)).toEqual(['a0', 'a1']);
        const either = where({ $or: [{ tags: 'biology' }, { year: 2020 }] });
        expect(named((await nearestWithPlans({ exact, condition: either })).hits)).toEqual([
          'a0',
          'b0',
          'a1',
          'b1',
        ]);
        const none = where({ tags: 'chemistry' });
        expect(named((await nearestWithPlans({ exact, condition: none })).hits)).toEqual([]);
        // Walking, each chunk's document is looked up as the walk passes it (a subplan under the
        // index scan), never joined: a join would sort what a whole walk found.
        const plan = filtered.plans[0];
        expect(plan.includes('chunks_embedding_3_idx')).toBe(!exact);
        expect(/"Subplan Name":"SubPlan \d+"/.test(plan)).toBe(!exact);
        expect(plan.includes('"Join Type":"Inner"')).toBe(exact);
      },
    );

    it('gives nothing when the dataset is embedded by another model', async () => {
      expect(await repository.nearest(reads.statements(), query({ model: 'another-model' }))).toEqual([]);
      expect(
        await repository.nearest(reads.statements(), query({ exact: false, model: 'another-model' })),
      ).toEqual([]);
    });

    it('ranks the dataset’s vectors while a new generation is built beside them', async () => {
      await withChange(
        `UPDATE dataset_index SET next_embedding_model = 'next', next_embedding_dimensions = 3,
                reembed_requested_at = now() WHERE dataset_seq = $1`,
        `UPDATE dataset_index SET next_embedding_model = NULL, next_embedding_dimensions = NULL,
                reembed_requested_at = NULL WHERE dataset_seq = $1`,
        [main.seq],
        async () => {
          expect(named(await repository.nearest(reads.statements(), query()))).toHaveLength(4);
          expect(named(await repository.nearest(reads.statements(), query({ exact: false })))).toHaveLength(
            4,
          );
        },
      );
    });

    it("gives only chunks of the query vector's dimension", async () => {
      expect(await repository.nearest(reads.statements(), query({ vector: [1, 0, 0, 0] }))).toEqual([]);
      const wideQuery = query({ datasetSeq: wide.seq, model: 'wide-model', vector: [0, 1, 0, 0] });
      const [hit] = await repository.nearest(reads.statements(), wideQuery);
      expect(named([hit])).toEqual(['f0']);
      expect(hit.distance).toBeCloseTo(1, 6);
    });
  });

  describe('ChunkReadsRepository.nearestAcross', () => {
    const across = (overrides: Partial<Parameters<ChunkReadsRepository['nearestAcross']>[1]> = {}) => ({
      datasetSeqs: [main.seq, other.seq],
      model: MODEL,
      vector: QUERY,
      candidates: 10,
      shown: 2,
      condition: null as ReturnType<typeof where> | null,
      ...overrides,
    });
    const named = (hits: { seq: string; datasetSeq: string }[]) =>
      hits.map(({ seq: s, datasetSeq }) => [
        Object.keys(chunks).find((name) => chunks[name].seq === s),
        datasetSeq === main.seq ? 'main' : datasetSeq === other.seq ? 'other' : datasetSeq,
      ]);

    it("walks the HNSW index for the datasets' nearest chunks together, the first `shown` with metadata", async () => {
      const { hits, plans } = await withPlans((read) => repository.nearestAcross(read, across()));
      expect(named(hits)).toEqual([
        ['e0', 'other'],
        ['a0', 'main'],
        ['b0', 'main'],
        ['a1', 'main'],
        ['b1', 'main'],
      ]);
      expect(hits[1]).toEqual({
        ...fullRow('a0', 'A'),
        datasetSeq: main.seq,
        distance: expect.any(Number),
        removed: '0',
      });
      expect(hits[2]).not.toHaveProperty('metadata');
      expect(plans).toHaveLength(1);
      expect(plans[0]).toContain('chunks_embedding_3_idx');
    });

    it('gives only chunks of the documents passing the filter, of datasets still embedded by the model', async () => {
      const guides = await repository.nearestAcross(
        reads.statements(),
        across({ condition: where({ category: 'guide' }) }),
      );
      expect(named(guides)).toEqual([
        ['a0', 'main'],
        ['a1', 'main'],
      ]);
      await withChange(
        `UPDATE dataset_index SET embedding_model = 'another-model' WHERE dataset_seq = $1`,
        `UPDATE dataset_index SET embedding_model = '${MODEL}' WHERE dataset_seq = $1`,
        [other.seq],
        async () => {
          const hits = await repository.nearestAcross(reads.statements(), across());
          expect(named(hits).map(([, dataset]) => dataset)).toEqual(['main', 'main', 'main', 'main']);
        },
      );
    });
  });

  describe('ChunkReadsRepository.passingDocuments', () => {
    it("counts the dataset's documents with chunks passing the filter, and their chunks", async () => {
      const passing = (filters: object) =>
        repository.passingDocuments(reads.statements(), main, where(filters));
      // C, processing a replacement, counts with the chunks of the version searched.
      expect(await passing({ category: 'guide' })).toEqual({ documents: 2, chunks: 3 });
      expect(await passing({ year: { $gte: 2021 } })).toEqual({ documents: 2, chunks: 3 });
      expect(await passing({ $or: [{ tags: 'biology' }, { year: 2020 }] })).toEqual({
        documents: 2,
        chunks: 4,
      });
      expect(await passing({ tags: 'chemistry' })).toEqual({ documents: 0, chunks: 0 });
      expect(
        await repository.passingDocuments(reads.statements(), other, where({ category: 'guide' })),
      ).toEqual({
        documents: 0,
        chunks: 0,
      });
    });
  });

  describe('ChunkReadsRepository.passingChunks', () => {
    it("gives the chunks of the dataset's documents passing the filter, up to a bound", async () => {
      const passing = (filters: object, max = 10) =>
        repository.passingChunks(reads.statements(), main.id, where(filters), max);
      const seqs = (...names: string[]) => new Set(names.map((name) => Number(chunks[name].seq)));
      expect(await passing({ category: 'guide' })).toEqual(seqs('a0', 'a1', 'c0'));
      expect(await passing({ $or: [{ tags: 'biology' }, { year: 2020 }] })).toEqual(
        seqs('a0', 'a1', 'b0', 'b1'),
      );
      expect(await passing({ tags: 'chemistry' })).toEqual(new Set());
      // More than the bound: none.
      expect(await passing({ $or: [{ tags: 'biology' }, { year: 2020 }] }, 3)).toBeNull();
      expect(await passing({ $or: [{ tags: 'biology' }, { year: 2020 }] }, 4)).toHaveProperty('size', 4);
      expect(
        await repository.passingChunks(reads.statements(), other.id, where({ category: 'guide' }), 10),
      ).toEqual(new Set());
    });
  });

  describe('ChunkReadsRepository.indexedChunks', () => {
    it('counts the chunks of every dataset embedded at the dimension', async () => {
      expect(await repository.indexedChunks(reads.statements(), 3)).toBe(6);
      expect(await repository.indexedChunks(reads.statements(), 4)).toBe(1);
      expect(await repository.indexedChunks(reads.statements(), 384)).toBe(0);
    });
  });
});
