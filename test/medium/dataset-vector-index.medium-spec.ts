import { ChunkIndexRepository } from 'src/modules/chunk-index/chunk-index.repository.js';
import { ChunkReadsRepository } from 'src/modules/chunk-index/chunk-reads.repository.js';
import {
  DatasetVectorIndexRepository,
  ownIndexName,
} from 'src/modules/chunk-index/dataset-vector-index.repository.js';
import { ChunkVectorsRepository } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import { IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import type { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { ReembedRepository } from 'src/modules/embeddings/reembed.repository.js';
import { ReembedService } from 'src/modules/embeddings/reembed.service.js';
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
import { strictMock } from '../utils/strict-mock.js';

const MODEL = 'test-model';
const DIMS = 3;
/** Datasets of this many chunks or more get their own index here. */
const MIN_CHUNKS = 20;
const SHARED = `chunks_embedding_${DIMS}_idx`;

/** `n` unit vectors spread around the first two axes. */
const vectors = (n: number) =>
  Array.from({ length: n }, (_, i) => [Math.cos(i / 7), Math.sin(i / 7), (i % 5) / 10]);

/**
 * A dataset's own HNSW index against the real schema: `large` has MIN_CHUNKS chunks and gets one,
 * `small` stays in the shared index of the dimension.
 */
describe('Per-dataset vector indexes', () => {
  let db: MediumDatabase;
  let indexes: DatasetVectorIndexRepository;
  let chunkIndex: ChunkIndexRepository;
  let accountId: string;
  let large: DatasetRow;
  let small: DatasetRow;

  /** Adds a document of `n` embedded chunks to `dataset`, as ingestion writes them. */
  async function fill(dataset: DatasetRow, n: number): Promise<void> {
    const documentId = await insertDocument(db.sql, dataset.id);
    const contents = Array.from({ length: n }, (_, i) => `chunk ${i} of ${dataset.id}`);
    await indexDocument(db.dataSource, chunkIndex, target(dataset, documentId), contents, vectors(n));
  }

  /** Whether an index of that name exists, and is valid; null when there is none. */
  async function validity(name: string): Promise<{ valid: boolean; oid: string } | null> {
    const { rows } = await db.sql.query<{ valid: boolean; oid: string }>(
      `SELECT indisvalid AS valid, indexrelid::oid::text AS oid FROM pg_index WHERE indexrelid = to_regclass($1)`,
      [name],
    );
    return rows[0] ?? null;
  }

  async function recorded(dataset: DatasetRow): Promise<number | null> {
    const { rows } = await db.sql.query<{ dims: number | null }>(
      'SELECT vector_index_dimensions AS dims FROM dataset_index WHERE dataset_seq = $1',
      [dataset.seq],
    );
    return rows[0].dims;
  }

  /** The plan of the vector leg's walk of `dataset` (`ChunkReadsRepository.nearest`), as text. */
  async function walkPlan(dataset: DatasetRow): Promise<string> {
    const client = await db.sql.connect();
    try {
      await client.query('BEGIN');
      // Too few rows for a walk to beat a scan: the choice between the indexes is what is checked.
      await client.query('SET LOCAL enable_seqscan = off');
      let plan = '';
      const explain = async <T>(text: string, values?: unknown[]): Promise<T[]> => {
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values);
        plan = rows.map((row) => row['QUERY PLAN']).join('\n');
        return [];
      };
      const repository = new ChunkReadsRepository();
      await repository.nearest(explain, {
        datasetSeq: dataset.seq,
        datasetId: dataset.id,
        model: MODEL,
        vector: [1, 0, 0],
        candidates: 10,
        shown: 10,
        condition: null,
        exact: false,
      });
      return plan;
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  }

  beforeAll(async () => {
    db = await openDatabase();
    chunkIndex = new ChunkIndexRepository(db.dataSource);
    indexes = new DatasetVectorIndexRepository(
      db.dataSource,
      { datasetIndexBuildMiB: 64 },
      { url: db.database.url },
    );
    await chunkIndex.ensureVectorIndex(DIMS);
    accountId = await insertAccount(db.sql);
  });
  afterAll(async () => {
    await db?.close();
  });
  beforeEach(async () => {
    large = await insertDataset(db.sql, accountId, { model: MODEL, dimensions: DIMS });
    small = await insertDataset(db.sql, accountId, { model: MODEL, dimensions: DIMS });
    await fill(large, MIN_CHUNKS);
    await fill(small, 5);
  });

  it('builds the index of a dataset that reached the threshold, and records it', async () => {
    const lacking = await indexes.lacking(MIN_CHUNKS);
    expect(lacking).toContainEqual({ datasetSeq: large.seq, dimensions: DIMS });
    expect(lacking).not.toContainEqual(expect.objectContaining({ datasetSeq: small.seq }));
    expect(await indexes.lacking(MIN_CHUNKS, small.seq)).toEqual([]);

    expect(await indexes.build({ datasetSeq: large.seq, dimensions: DIMS })).toBe(true);
    const name = ownIndexName({ datasetSeq: large.seq, dimensions: DIMS });
    expect(await validity(name)).toEqual(expect.objectContaining({ valid: true }));
    expect(await recorded(large)).toBe(DIMS);
    expect(await indexes.lacking(MIN_CHUNKS, large.seq)).toEqual([]);
    const { rows } = await db.sql.query<{ definition: string }>(
      'SELECT indexdef AS definition FROM pg_indexes WHERE indexname = $1',
      [name],
    );
    expect(rows[0].definition).toContain(`hnsw (((embedding)::halfvec(${DIMS})) halfvec_cosine_ops)`);
    expect(rows[0].definition).toContain(`dataset_seq = ${large.seq}`);
  });

  it("walks the dataset's own index for it, and the shared one for the others", async () => {
    await indexes.build({ datasetSeq: large.seq, dimensions: DIMS });
    const own = ownIndexName({ datasetSeq: large.seq, dimensions: DIMS });
    const largePlan = await walkPlan(large);
    expect(largePlan).toContain(`Index Scan using ${own}`);
    const smallPlan = await walkPlan(small);
    expect(smallPlan).toContain(`Index Scan using ${SHARED}`);
    expect(smallPlan).not.toContain(own);
  });

  it('drops an invalid index left by a failed build, and builds it again', async () => {
    await indexes.build({ datasetSeq: large.seq, dimensions: DIMS });
    const name = ownIndexName({ datasetSeq: large.seq, dimensions: DIMS });
    const before = await validity(name);
    // What a build that failed or was interrupted leaves: the index in the catalogue, not valid.
    await db.sql.query('UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass($1)', [name]);
    await db.sql.query('UPDATE dataset_index SET vector_index_dimensions = NULL WHERE dataset_seq = $1', [
      large.seq,
    ]);
    expect(await validity(name)).toEqual(expect.objectContaining({ valid: false }));

    expect(await indexes.lacking(MIN_CHUNKS, large.seq)).toEqual([
      { datasetSeq: large.seq, dimensions: DIMS },
    ]);
    expect(await indexes.build({ datasetSeq: large.seq, dimensions: DIMS })).toBe(true);
    const after = await validity(name);
    expect(after).toEqual(expect.objectContaining({ valid: true }));
    expect(after!.oid).not.toBe(before!.oid);
    expect(await recorded(large)).toBe(DIMS);
  });

  it('drops the index of a deleted dataset', async () => {
    await indexes.build({ datasetSeq: large.seq, dimensions: DIMS });
    const index = { datasetSeq: large.seq, dimensions: DIMS };
    expect(await indexes.stale(large.seq)).toEqual([]);

    await db.sql.query('DELETE FROM datasets WHERE id = $1', [large.id]);
    expect(await indexes.stale()).toContainEqual(index);
    expect(await indexes.dropStale(large.seq)).toEqual([index]);
    expect(await validity(ownIndexName(index))).toBeNull();
    expect(await validity(SHARED)).toEqual(expect.objectContaining({ valid: true }));
  });

  it('drops the index of a dataset re-embedded at another dimension, and asks for the new one', async () => {
    await indexes.build({ datasetSeq: large.seq, dimensions: DIMS });
    const old = { datasetSeq: large.seq, dimensions: DIMS };
    await db.sql.query('UPDATE dataset_index SET embedding_dimensions = 4 WHERE dataset_seq = $1', [
      large.seq,
    ]);

    expect(await indexes.dropStale(large.seq)).toEqual([old]);
    expect(await validity(ownIndexName(old))).toBeNull();
    expect(await indexes.lacking(MIN_CHUNKS, large.seq)).toEqual([{ datasetSeq: large.seq, dimensions: 4 }]);
  });

  it("drops the old dimension's index at the end of a re-embedding at another dimension", async () => {
    await indexes.build({ datasetSeq: large.seq, dimensions: DIMS });
    const database = { url: db.database.url };
    const chunkVectors = new ChunkVectorsRepository(db.dataSource);
    const wider = {
      model: 'wider-model',
      dimensions: 4,
      embedPassages: (texts: string[]) => Promise.resolve(texts.map(() => [1, 0, 0, 0])),
    } as unknown as EmbeddingProvider;
    const reembed = new ReembedService(
      new ReembedRepository(db.dataSource, database, chunkIndex, chunkVectors, new IndexStateRepository()),
      chunkVectors,
      strictMock<EmbeddingService>({ current: () => wider }),
      indexes,
    );
    expect(await reembed.reembed(large.id)).toEqual(
      expect.objectContaining({ chunks: MIN_CHUNKS, dimensions: 4 }),
    );
    expect(await validity(ownIndexName({ datasetSeq: large.seq, dimensions: DIMS }))).toBeNull();
    expect(await indexes.lacking(MIN_CHUNKS, large.seq)).toEqual([{ datasetSeq: large.seq, dimensions: 4 }]);
  });

  it('does not build the index of a dataset deleted before its build', async () => {
    const index = { datasetSeq: large.seq, dimensions: DIMS };
    await db.sql.query('DELETE FROM datasets WHERE id = $1', [large.id]);
    expect(await indexes.build(index)).toBe(false);
    expect(await validity(ownIndexName(index))).toBeNull();
  });
});
