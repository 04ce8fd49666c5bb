import pg from 'pg';
import { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import { DatasetVectorIndexRepository } from 'src/modules/chunk-index/dataset-vector-index.repository.js';
import { ChunkVectorsRepository } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import { IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import type { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { ReembedRepository } from 'src/modules/embeddings/reembed.repository.js';
import { ReembedService } from 'src/modules/embeddings/reembed.service.js';
import { strictMock } from '../utils/strict-mock.js';
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

const MODEL = { name: 'm', dimensions: 2 };
const OLD = [0, 1];
const NEW = [1, 0];

/**
 * The catch-up of chunks indexed keyword-only against the real schema: which datasets it picks
 * (`ChunkVectorsRepository.datasetsMissingVectors`) and what `ReembedService.embedMissing` writes.
 */
describe('Catching up chunks without vectors', () => {
  let db: MediumDatabase;
  let index: ChunkIndexRepository;
  let vectors: ChunkVectorsRepository;
  let reembed: ReembedService;
  let accountId: string;
  const embedded: string[] = [];
  const provider = {
    model: MODEL.name,
    dimensions: MODEL.dimensions,
    embedPassages: (texts: string[]) => {
      embedded.push(...texts);
      return Promise.resolve(texts.map(() => NEW));
    },
  } as unknown as EmbeddingProvider;

  beforeAll(async () => {
    db = await openDatabase();
    index = new ChunkIndexRepository(db.dataSource);
    vectors = new ChunkVectorsRepository(db.dataSource);
    const database = { url: db.database.url };
    reembed = new ReembedService(
      new ReembedRepository(db.dataSource, database, index, vectors, new IndexStateRepository()),
      vectors,
      strictMock<EmbeddingService>({}),
      new DatasetVectorIndexRepository(db.dataSource, { datasetIndexBuildMiB: 512 }, database),
    );
    accountId = await insertAccount(db.sql);
  });
  afterAll(async () => {
    await db?.close();
  });
  beforeEach(() => {
    embedded.length = 0;
  });

  /** A dataset with a document of `contents`, embedded with `vector` (keyword-only when null). */
  const dataset = async (
    model: { model: string; dimensions: number } | null,
    documents: { contents: string[]; vector: number[] | null }[],
  ) => {
    const row = await insertDataset(db.sql, accountId, model);
    for (const { contents, vector } of documents) {
      const documentId = await insertDocument(db.sql, row.id);
      await indexDocument(
        db.dataSource,
        index,
        target(row, documentId),
        contents,
        vector && contents.map(() => vector),
      );
    }
    return row;
  };
  /** Marks the dataset as building a generation of `model`, as a request does. */
  const building = (row: DatasetRow, model: { name: string; dimensions: number }) =>
    db.sql.query(
      `UPDATE dataset_index SET next_embedding_model = $2, next_embedding_dimensions = $3,
              reembed_requested_at = now() WHERE dataset_id = $1`,
      [row.id, model.name, model.dimensions],
    );
  const state = async (row: DatasetRow) => {
    const { rows } = await db.sql.query<{ content: string; embedding: string | null }>(
      'SELECT content, embedding::text AS embedding FROM chunks WHERE dataset_seq = $1 ORDER BY seq',
      [row.seq],
    );
    const [dataset] = (
      await db.sql.query(
        'SELECT embedding_model, embedding_dimensions FROM dataset_index WHERE dataset_id = $1',
        [row.id],
      )
    ).rows;
    return { dataset, chunks: Object.fromEntries(rows.map((r) => [r.content, r.embedding])) };
  };

  it('picks the datasets with chunks without a vector and no other model’s vectors, not being re-embedded', async () => {
    const keywordOnly = await dataset(null, [{ contents: ['a1', 'a2'], vector: null }]);
    const partly = await dataset({ model: 'm', dimensions: 2 }, [
      { contents: ['b1'], vector: OLD },
      { contents: ['b2'], vector: null },
    ]);
    const whole = await dataset({ model: 'm', dimensions: 2 }, [{ contents: ['c1'], vector: OLD }]);
    const otherModel = await dataset({ model: 'other', dimensions: 2 }, [{ contents: ['d1'], vector: null }]);
    const otherDimension = await dataset({ model: 'm', dimensions: 8 }, [{ contents: ['e1'], vector: null }]);
    const reembedding = await dataset(null, [{ contents: ['f1'], vector: null }]);
    await building(reembedding, MODEL);
    const empty = await dataset(null, []);

    const picked = await vectors.datasetsMissingVectors(MODEL);
    expect(picked).toEqual(expect.arrayContaining([keywordOnly.id, partly.id]));
    for (const left of [whole, otherModel, otherDimension, reembedding, empty]) {
      expect(picked).not.toContain(left.id);
    }
  });

  it('embeds only the chunks without a vector, and records the model of a dataset that had none', async () => {
    const keywordOnly = await dataset(null, [{ contents: ['g1', 'g2', 'g3'], vector: null }]);
    expect(await reembed.embedMissing(keywordOnly.id, provider, new AbortController().signal)).toBe(3);
    expect(await state(keywordOnly)).toEqual({
      dataset: { embedding_model: 'm', embedding_dimensions: 2 },
      chunks: { g1: '[1,0]', g2: '[1,0]', g3: '[1,0]' },
    });

    const partly = await dataset({ model: 'm', dimensions: 2 }, [
      { contents: ['h1'], vector: OLD },
      { contents: ['h2', 'h3'], vector: null },
    ]);
    embedded.length = 0;
    expect(await reembed.embedMissing(partly.id, provider, new AbortController().signal)).toBe(2);
    expect(embedded).toEqual(['h2', 'h3']);
    expect((await state(partly)).chunks).toEqual({ h1: '[0,1]', h2: '[1,0]', h3: '[1,0]' });
  });

  it('writes nothing into a dataset of another model', async () => {
    const other = await dataset({ model: 'other', dimensions: 2 }, [{ contents: ['i1'], vector: null }]);
    expect(await reembed.embedMissing(other.id, provider, new AbortController().signal)).toBe(0);
    expect(await state(other)).toEqual({
      dataset: { embedding_model: 'other', embedding_dimensions: 2 },
      chunks: { i1: null },
    });
  });

  it('writes nothing into a dataset whose next generation is being built: the build embeds it', async () => {
    const next = await dataset(null, [{ contents: ['k1'], vector: null }]);
    await building(next, MODEL);
    expect(await reembed.embedMissing(next.id, provider, new AbortController().signal)).toBe(0);
    expect((await state(next)).chunks).toEqual({ k1: null });
  });

  it('leaves a dataset whose re-embedding lock another session holds to it', async () => {
    const held = await dataset(null, [{ contents: ['j1'], vector: null }]);
    const other = new pg.Client({ connectionString: db.database.url });
    await other.connect();
    try {
      await other.query(`SELECT pg_advisory_lock(hashtextextended('dataset reembedding ' || $1, 0))`, [
        held.id,
      ]);
      expect(await reembed.embedMissing(held.id, provider, new AbortController().signal)).toBeNull();
      expect((await state(held)).chunks).toEqual({ j1: null });
    } finally {
      await other.end();
    }
  });
});

/**
 * A dataset's move to another model against the real schema: the generation built beside the searched
 * vectors (`ReembedService.build`), chunks indexed meanwhile, the switch, and cancelling.
 */
describe('Re-embedding beside the searched vectors', () => {
  let db: MediumDatabase;
  let index: ChunkIndexRepository;
  let vectors: ChunkVectorsRepository;
  let reembed: ReembedService;
  let accountId: string;
  const NEXT = { name: 'next', dimensions: 3 };
  /** Called before each page is embedded; a test may hold the build there. */
  let beforePage: (texts: string[]) => Promise<void> = () => Promise.resolve();
  const provider = {
    model: NEXT.name,
    dimensions: NEXT.dimensions,
    embedPassages: async (texts: string[]) => {
      await beforePage(texts);
      return texts.map(() => [0, 0, 1]);
    },
  } as unknown as EmbeddingProvider;

  beforeAll(async () => {
    db = await openDatabase();
    index = new ChunkIndexRepository(db.dataSource);
    vectors = new ChunkVectorsRepository(db.dataSource);
    const database = { url: db.database.url };
    reembed = new ReembedService(
      new ReembedRepository(db.dataSource, database, index, vectors, new IndexStateRepository()),
      vectors,
      strictMock<EmbeddingService>({ current: () => provider }),
      new DatasetVectorIndexRepository(db.dataSource, { datasetIndexBuildMiB: 512 }, database),
    );
    accountId = await insertAccount(db.sql);
  });
  afterAll(async () => {
    await db?.close();
  });
  afterEach(() => {
    beforePage = () => Promise.resolve();
  });

  const datasetOf = async (contents: string[]) => {
    const row = await insertDataset(db.sql, accountId, { model: 'm', dimensions: 2 });
    const documentId = await insertDocument(db.sql, row.id);
    await indexDocument(
      db.dataSource,
      index,
      target(row, documentId),
      contents,
      contents.map(() => OLD),
    );
    return row;
  };
  const vectorsOf = async (row: DatasetRow) => {
    const { rows } = await db.sql.query<{ content: string; embedding: string | null; next: string | null }>(
      `SELECT content, embedding::text AS embedding, next_embedding::text AS next
         FROM chunks WHERE dataset_seq = $1 ORDER BY seq`,
      [row.seq],
    );
    const [model] = (
      await db.sql.query(
        `SELECT embedding_model AS model, embedding_dimensions AS dimensions, next_embedding_model AS next
           FROM dataset_index WHERE dataset_id = $1`,
        [row.id],
      )
    ).rows;
    return { model, chunks: rows.map((r) => [r.content, r.embedding, r.next]) };
  };

  it('keeps the old vectors searched while the new are built, then switches to them all at once', async () => {
    const row = await datasetOf(['a1', 'a2']);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const atPage = new Promise<void>((resolve) => (reached = resolve));
    beforePage = () => (reached(), held);

    expect(await reembed.request(row.id)).toMatchObject({
      status: 'building',
      from_model: 'm',
      model: 'next',
      dimensions: 3,
      chunks_total: 2,
      chunks_embedded: 0,
    });
    const run = reembed.build(row.id, provider);
    await atPage;
    // Mid-build: the dataset is still of its model, with its vectors; a document indexed meanwhile
    // with the new model's vectors has them in the new generation only.
    const late = await insertDocument(db.sql, row.id);
    await db.dataSource.transaction('READ COMMITTED', async (tx) => {
      await index.lockDataset(tx, row.id);
      await index.replaceDocumentChunks(
        tx,
        target(row, late),
        [{ content: 'late', tokenCount: 1, charStart: 0, charEnd: 4 }],
        {
          ...NEXT,
          vectors: [[1, 1, 1]],
        },
      );
    });
    expect(await vectorsOf(row)).toEqual({
      model: { model: 'm', dimensions: 2, next: 'next' },
      chunks: [
        ['a1', '[0,1]', null],
        ['a2', '[0,1]', null],
        ['late', null, '[1,1,1]'],
      ],
    });
    expect(await reembed.status(row.id)).toMatchObject({ chunks_total: 3, chunks_embedded: 1 });
    release();
    // Only the chunks without a vector of the new model were embedded by the build.
    expect(await run).toEqual({ dataset_id: row.id, chunks: 2, model: 'next', dimensions: 3 });
    expect(await vectorsOf(row)).toEqual({
      model: { model: 'next', dimensions: 3, next: null },
      chunks: [
        ['a1', '[0,0,1]', null],
        ['a2', '[0,0,1]', null],
        ['late', '[1,1,1]', null],
      ],
    });
    expect(await reembed.status(row.id)).toMatchObject({ status: 'none', model: null });
  });

  it('answers a request for the model under way with it, and refuses one for another model', async () => {
    const row = await datasetOf(['b1']);
    await reembed.request(row.id);
    expect(await reembed.request(row.id)).toMatchObject({ status: 'building', model: 'next' });
    const other = { ...provider, model: 'other' } as EmbeddingProvider;
    await expect(reembed.request(row.id, other)).rejects.toMatchObject({
      status: 409,
      code: 'reembed_in_progress',
    });
    expect(await reembed.cancel(row.id)).toBe(true);
    expect(await reembed.cancel(row.id)).toBe(false);
  });

  it('stops a build that is cancelled under way, leaving the dataset as it was', async () => {
    const row = await datasetOf(['c1', 'c2']);
    await reembed.request(row.id);
    beforePage = async () => {
      await reembed.cancel(row.id);
    };
    await expect(reembed.build(row.id, provider)).rejects.toMatchObject({ code: 'reembed_cancelled' });
    expect(await vectorsOf(row)).toEqual({
      model: { model: 'm', dimensions: 2, next: null },
      chunks: [
        ['c1', '[0,1]', null],
        ['c2', '[0,1]', null],
      ],
    });
  });

  it('takes an interrupted build up where it stopped', async () => {
    const row = await datasetOf(['d1', 'd2']);
    await reembed.request(row.id);
    const [first] = (
      await db.sql.query<{ seq: string }>(
        'SELECT seq FROM chunks WHERE dataset_seq = $1 ORDER BY seq LIMIT 1',
        [row.seq],
      )
    ).rows;
    await db.sql.query(`UPDATE chunks SET next_embedding = '[0,0,1]' WHERE seq = $1`, [first.seq]);
    const embedded: string[] = [];
    beforePage = (texts) => (embedded.push(...texts), Promise.resolve());
    expect(await reembed.build(row.id, provider)).toMatchObject({ chunks: 1, model: 'next' });
    expect(embedded).toEqual(['d2']);
  });
});
