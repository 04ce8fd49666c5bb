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
    await db.sql.query('UPDATE dataset_index SET reembedding = true WHERE dataset_id = $1', [reembedding.id]);
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
