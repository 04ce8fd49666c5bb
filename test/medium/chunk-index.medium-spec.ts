import { withDeadline } from 'src/common/async/deadline.js';
import { ChunkIndexRepository, ExclusiveLockNeeded } from 'src/modules/chunk-index/chunk-index.repository.js';
import { DatasetEntity } from 'src/modules/datasets/dataset.entity.js';
import { DatasetsRepository } from 'src/modules/datasets/datasets.repository.js';
import { until } from '../utils/until.js';
import {
  chunksOf,
  type DatasetRow,
  FIXTURE_MODEL,
  indexDocument,
  insertAccount,
  insertDataset,
  insertDocument,
  type MediumDatabase,
  openDatabase,
  recountedStatistics,
  storedStatistics,
  target,
  termVersions,
} from './fixtures.js';

/**
 * The search index's writer against the real schema: what `ChunkIndexRepository` leaves in `chunks`,
 * `chunk_terms`, `term_stats` and the dataset's totals, read back from the tables.
 */
describe('ChunkIndexRepository', () => {
  let db: MediumDatabase;
  let index: ChunkIndexRepository;
  let accountId: string;

  beforeAll(async () => {
    db = await openDatabase({ entities: [DatasetEntity] });
    index = new ChunkIndexRepository(db.dataSource);
    accountId = await insertAccount(db.sql);
  });
  afterAll(async () => {
    await db?.close();
  });

  /** A dataset of its own for each test, with `documents` documents in it. */
  const datasetWith = async (documents: number) => {
    const dataset = await insertDataset(db.sql, accountId);
    const ids: string[] = [];
    for (let i = 0; i < documents; i++) ids.push(await insertDocument(db.sql, dataset.id));
    return { dataset, ids };
  };
  const write = (dataset: DatasetRow, documentId: string, contents: string[], vectors?: number[][]) =>
    indexDocument(db.dataSource, index, target(dataset, documentId), contents, vectors ?? null);
  const remove = (dataset: DatasetRow, documentId: string) =>
    db.dataSource.transaction('READ COMMITTED', async (tx) => {
      await index.lockDataset(tx, dataset.id);
      return index.removeDocumentChunks(tx, dataset.seq, documentId);
    });

  const chunkRows = async (documentId: string) =>
    (
      await db.sql.query(
        `SELECT seq::text, id, dataset_seq::text AS "datasetSeq", ordinal, content, token_count AS "tokenCount",
                page, char_start AS "charStart", char_end AS "charEnd", length, embedding::text AS embedding
           FROM chunks WHERE document_id = $1 ORDER BY ordinal`,
        [documentId],
      )
    ).rows;
  /** A chunk's postings, as term → tf; each must carry the chunk's length. */
  const postingsOf = async (chunkSeq: string) => {
    const { rows } = await db.sql.query<{ term: string; tf: number; length: number }>(
      'SELECT term, tf, length FROM chunk_terms WHERE chunk_seq = $1',
      [chunkSeq],
    );
    return Object.fromEntries(rows.map(({ term, tf }) => [term, tf]));
  };
  /**
   * The statistics' invariant: each term's df is its number of postings, the dataset's totals are the
   * sums over its chunks, a chunk's length is the sum of its tfs, and every posting carries it.
   */
  const expectConsistent = async (dataset: DatasetRow) => {
    expect(await storedStatistics(db.sql, dataset.seq)).toEqual(
      await recountedStatistics(db.sql, dataset.seq),
    );
    const { rows } = await db.sql.query(
      `SELECT c.seq FROM chunks c LEFT JOIN chunk_terms p ON p.chunk_seq = c.seq
        WHERE c.dataset_seq = $1
        GROUP BY c.seq, c.length
       HAVING c.length <> coalesce(sum(p.tf), 0) OR bool_or(p.length <> c.length)`,
      [dataset.seq],
    );
    expect(rows).toEqual([]);
  };

  describe('replaceDocumentChunks', () => {
    it('writes the chunks in order, each with its postings, tfs and a length that is the sum of its tfs', async () => {
      const { dataset, ids } = await datasetWith(1);
      const contents = ['The cat sat on the mat with another cat.', 'Dogs chase cats.', 'The and of it.'];
      await write(dataset, ids[0], contents);

      const rows = await chunkRows(ids[0]);
      expect(rows).toEqual(
        chunksOf(contents).map((chunk, ordinal) => ({
          ...chunk,
          seq: expect.any(String),
          id: expect.stringMatching(/^chk_[0-9A-Za-z]{22}$/),
          datasetSeq: dataset.seq,
          ordinal,
          page: null,
          length: [5, 3, 0][ordinal],
          embedding: null,
        })),
      );
      expect(await postingsOf(rows[0].seq)).toEqual({ cat: 2, sat: 1, mat: 1, anoth: 1 });
      expect(await postingsOf(rows[1].seq)).toEqual({ dog: 1, chase: 1, cat: 1 });
      // Stop words alone: a chunk of length 0, without postings.
      expect(await postingsOf(rows[2].seq)).toEqual({});
      expect(await storedStatistics(db.sql, dataset.seq)).toEqual({
        chunkCount: 3,
        totalLength: 8,
        df: { cat: 2, sat: 1, mat: 1, anoth: 1, dog: 1, chase: 1 },
      });
      await expectConsistent(dataset);
    });

    it('keeps pages and positions as given', async () => {
      const { dataset, ids } = await datasetWith(1);
      await db.dataSource.transaction(async (tx) => {
        await index.lockDataset(tx, dataset.id);
        await index.replaceDocumentChunks(
          tx,
          target(dataset, ids[0]),
          [
            { content: 'First page text.', tokenCount: 4, page: 1, charStart: 10, charEnd: 26 },
            { content: 'Second page text.', tokenCount: 5, page: 2, charStart: 30, charEnd: 47 },
          ],
          null,
        );
      });
      const rows = await chunkRows(ids[0]);
      expect(
        rows.map(({ ordinal, page, tokenCount, charStart, charEnd }) => ({
          ordinal,
          page,
          tokenCount,
          charStart,
          charEnd,
        })),
      ).toEqual([
        { ordinal: 0, page: 1, tokenCount: 4, charStart: 10, charEnd: 26 },
        { ordinal: 1, page: 2, tokenCount: 5, charStart: 30, charEnd: 47 },
      ]);
    });

    it('replaces an earlier write of the document, adjusting the statistics by the difference', async () => {
      const { dataset, ids } = await datasetWith(2);
      const [replaced, other] = ids;
      await write(dataset, replaced, ['alpha beta', 'beta gamma']);
      await write(dataset, other, ['beta delta']);
      const before = await chunkRows(replaced);
      const otherBefore = await chunkRows(other);
      const versionsBefore = await termVersions(db.sql, dataset.seq);
      expect(await storedStatistics(db.sql, dataset.seq)).toEqual({
        chunkCount: 3,
        totalLength: 6,
        df: { alpha: 1, beta: 3, gamma: 1, delta: 1 },
      });

      await write(dataset, replaced, ['beta epsilon epsilon']);

      const after = await chunkRows(replaced);
      expect(after.map(({ ordinal, content, length }) => ({ ordinal, content, length }))).toEqual([
        { ordinal: 0, content: 'beta epsilon epsilon', length: 3 },
      ]);
      // New chunks, not the old ones rewritten; the other document's are untouched.
      expect(before.map(({ id }) => id)).not.toContain(after[0].id);
      const { rows: leftOver } = await db.sql.query('SELECT 1 FROM chunk_terms WHERE chunk_seq = ANY($1)', [
        before.map(({ seq }) => seq),
      ]);
      expect(leftOver).toEqual([]);
      expect(await chunkRows(other)).toEqual(otherBefore);
      expect(await postingsOf(after[0].seq)).toEqual({ beta: 1, epsilon: 2 });
      // 3 chunks of length 6 become 2 of length 5: alpha and gamma are in no chunk left and lose their rows.
      expect(await storedStatistics(db.sql, dataset.seq)).toEqual({
        chunkCount: 2,
        totalLength: 5,
        df: { beta: 2, delta: 1, epsilon: 1 },
      });
      await expectConsistent(dataset);
      // Terms whose postings changed get a version newer than any before; the others keep theirs.
      const newest = Object.values(versionsBefore).reduce((a, b) => (a > b ? a : b));
      const versions = await termVersions(db.sql, dataset.seq);
      expect(versions.beta).toBeGreaterThan(newest);
      expect(versions.epsilon).toBeGreaterThan(newest);
      expect(versions.delta).toBe(versionsBefore.delta);
    });

    it('gives a term that comes back a version it never had', async () => {
      const { dataset, ids } = await datasetWith(1);
      await write(dataset, ids[0], ['alpha']);
      const first = (await termVersions(db.sql, dataset.seq)).alpha;
      await write(dataset, ids[0], ['omega']);
      expect(await termVersions(db.sql, dataset.seq)).not.toHaveProperty('alpha');
      await write(dataset, ids[0], ['alpha']);
      expect((await termVersions(db.sql, dataset.seq)).alpha).toBeGreaterThan(first);
    });

    it('takes all chunks out when the document is written again with none', async () => {
      const { dataset, ids } = await datasetWith(2);
      await write(dataset, ids[1], ['beta delta']);
      const alone = await storedStatistics(db.sql, dataset.seq);
      await write(dataset, ids[0], ['alpha beta', 'beta gamma']);
      await write(dataset, ids[0], []);
      expect(await chunkRows(ids[0])).toEqual([]);
      expect(await storedStatistics(db.sql, dataset.seq)).toEqual(alone);
    });

    it('stores a vector per chunk when given, and none when not', async () => {
      const { dataset, ids } = await datasetWith(1);
      await write(
        dataset,
        ids[0],
        ['first', 'second'],
        [
          [1, 0, 0],
          [0, 0.5, -2],
        ],
      );
      expect((await chunkRows(ids[0])).map(({ embedding }) => embedding)).toEqual(['[1,0,0]', '[0,0.5,-2]']);
      // Written again without vectors (a keyword-only run): the chunks have none.
      await write(dataset, ids[0], ['first', 'second']);
      expect((await chunkRows(ids[0])).map(({ embedding }) => embedding)).toEqual([null, null]);
    });

    it("records its first vectors' model as the dataset's, indexes another model's keyword-only, and a building one's beside", async () => {
      const { dataset, ids } = await datasetWith(3);
      const model = async () =>
        (
          await db.sql.query<{ embedding_model: string | null; embedding_dimensions: number | null }>(
            'SELECT embedding_model, embedding_dimensions FROM dataset_index WHERE dataset_seq = $1',
            [dataset.seq],
          )
        ).rows[0];
      /** Written while the dataset builds a generation of `next` (3 dimensions), when given. */
      const writeOf = (documentId: string, vectors: number[][], name: string, next: string | null = null) =>
        db.dataSource.transaction('READ COMMITTED', async (tx) => {
          await index.lockDataset(tx, dataset.id);
          await tx.query(
            `UPDATE dataset_index SET next_embedding_model = $2, next_embedding_dimensions = $3,
                    reembed_requested_at = CASE WHEN $2::text IS NULL THEN NULL ELSE now() END
              WHERE dataset_id = $1`,
            [dataset.id, next, next && 3],
          );
          return index.replaceDocumentChunks(tx, target(dataset, documentId), chunksOf(['text']), {
            name,
            dimensions: vectors[0].length,
            vectors,
          });
        });
      const nextVector = async (documentId: string) =>
        (
          await db.sql.query('SELECT next_embedding::text AS v FROM chunks WHERE document_id = $1', [
            documentId,
          ])
        ).rows[0].v as string | null;
      expect(await model()).toEqual({ embedding_model: null, embedding_dimensions: null });
      expect(await writeOf(ids[0], [[1, 0, 0]], 'model-a')).toBe('model-a');
      expect(await model()).toEqual({ embedding_model: 'model-a', embedding_dimensions: 3 });
      expect((await chunkRows(ids[0]))[0].embedding).toBe('[1,0,0]');
      // Another model's vectors: keyword-only, the model kept.
      expect(await writeOf(ids[1], [[0, 1, 0]], 'model-b')).toBeNull();
      expect((await chunkRows(ids[1]))[0].embedding).toBeNull();
      // While a generation of model-b is built: its vectors go there, the searched model's stay searched.
      expect(await writeOf(ids[1], [[0, 1, 0]], 'model-b', 'model-b')).toBe('model-b');
      expect((await chunkRows(ids[1]))[0].embedding).toBeNull();
      expect(await nextVector(ids[1])).toBe('[0,1,0]');
      expect(await writeOf(ids[2], [[0, 0, 1]], 'model-a', 'model-b')).toBe('model-a');
      expect((await chunkRows(ids[2]))[0].embedding).toBe('[0,0,1]');
      expect(await nextVector(ids[2])).toBeNull();
      expect(await model()).toEqual({ embedding_model: 'model-a', embedding_dimensions: 3 });
      await expectConsistent(dataset);
    });

    it('takes lexemes from the lexeme source and keeps the content as written', async () => {
      const { dataset, ids } = await datasetWith(1);
      // U+FB01 (the ﬁ ligature), and é written as e + U+0301 (combining acute accent).
      const contents = ['The \uFB01le was saved.', 'Cafe\u0301 menus.'];
      await write(dataset, ids[0], contents);
      const rows = await chunkRows(ids[0]);
      expect(rows.map(({ content }) => content)).toEqual(contents);
      expect(await postingsOf(rows[0].seq)).toEqual({ file: 1, save: 1 });
      expect(await postingsOf(rows[1].seq)).toEqual({ 'caf\u00e9': 1, menus: 1 });
      expect(Object.keys((await storedStatistics(db.sql, dataset.seq)).df).sort()).toEqual([
        'caf\u00e9',
        'file',
        'menus',
        'save',
      ]);
    });

    it('writes a document of more chunks than a statement takes with ordinals and vectors in step', async () => {
      const { dataset, ids } = await datasetWith(1);
      // 5,000 chunks a statement: three statements.
      const count = 10_050;
      const contents = Array.from({ length: count }, (_, i) => `chunk number ${i}`);
      const vectors = Array.from({ length: count }, (_, i) => [i, 1, 0]);
      await write(dataset, ids[0], contents, vectors);
      const { rows } = await db.sql.query<{ ordinal: number; content: string; embedding: string }>(
        `SELECT ordinal, content, embedding::text AS embedding FROM chunks
          WHERE document_id = $1 AND ordinal IN (0, 4999, 5000, 10049) ORDER BY ordinal`,
        [ids[0]],
      );
      expect(rows).toEqual(
        [0, 4999, 5000, 10049].map((i) => ({
          ordinal: i,
          content: `chunk number ${i}`,
          embedding: `[${i},1,0]`,
        })),
      );
      const { rows: ordinals } = await db.sql.query(
        `SELECT count(*)::int AS n, count(DISTINCT ordinal)::int AS distinct, max(ordinal) AS max
           FROM chunks WHERE document_id = $1`,
        [ids[0]],
      );
      expect(ordinals[0]).toEqual({ n: count, distinct: count, max: count - 1 });
      const stats = await storedStatistics(db.sql, dataset.seq);
      // `chunk` and `number` in every chunk, and one number each (`0` to `10049`).
      expect(stats.chunkCount).toBe(count);
      expect(stats.totalLength).toBe(3 * count);
      expect(stats.df).toMatchObject({ chunk: count, number: count, '0': 1, '10049': 1 });
      await expectConsistent(dataset);
    });
  });

  describe('replaceChunks', () => {
    it('writes several documents in one call as each alone would, vectors into the generation of their model', async () => {
      const together = await datasetWith(3);
      const apart = await datasetWith(3);
      const contents = [
        ['Cats sit on mats.', 'A cat naps.'],
        ['Dogs chase cats.'],
        ['Mats and dogs, again mats.'],
      ];
      // The third document's earlier run is replaced in both.
      await write(together.dataset, together.ids[2], ['An old run about owls.']);
      await write(apart.dataset, apart.ids[2], ['An old run about owls.']);
      const vectors = (n: number) => Array.from({ length: n }, (_, i) => [1, i, 0]);
      const model = { name: FIXTURE_MODEL, dimensions: 3 };
      const documents = (ids: string[]) =>
        contents.map((chunks, d) => ({
          documentId: ids[d],
          chunks: chunksOf(chunks),
          // The second document is keyword-only, as one indexed while the model was loading.
          embeddings: d === 1 ? null : { ...model, vectors: vectors(chunks.length) },
        }));
      const models = await db.dataSource.transaction(async (tx) => {
        await index.lockDataset(tx, together.dataset.id);
        return index.replaceChunks(tx, target(together.dataset, ''), documents(together.ids));
      });
      expect(models).toEqual([FIXTURE_MODEL, null, FIXTURE_MODEL]);
      for (const document of documents(apart.ids)) {
        await db.dataSource.transaction(async (tx) => {
          await index.lockDataset(tx, apart.dataset.id);
          await index.replaceChunks(tx, target(apart.dataset, ''), [document]);
        });
      }
      const stored = async (dataset: DatasetRow, ids: string[]) => ({
        statistics: await storedStatistics(db.sql, dataset.seq),
        chunks: await Promise.all(
          ids.map(async (id) =>
            (await chunkRows(id)).map(({ ordinal, content, length, embedding }) => ({
              ordinal,
              content,
              length,
              embedding,
            })),
          ),
        ),
        model: (
          await db.sql.query(
            `SELECT embedding_model, embedding_dimensions FROM dataset_index WHERE dataset_seq = $1`,
            [dataset.seq],
          )
        ).rows[0],
      });
      const written = await stored(together.dataset, together.ids);
      expect(written).toEqual(await stored(apart.dataset, apart.ids));
      expect(written.model).toEqual({ embedding_model: FIXTURE_MODEL, embedding_dimensions: 3 });
      expect(written.chunks[1][0].embedding).toBeNull();
      expect(written.chunks[2][0].embedding).toBe('[1,0,0]');
      expect(written.statistics.df.owl).toBeUndefined();
      await expectConsistent(together.dataset);
    });

    it('removes earlier chunks only of the documents not marked unindexed', async () => {
      const { dataset, ids } = await datasetWith(3);
      await write(dataset, ids[0], ['An old run about owls.']);
      // The caller's word is taken: the second document's chunks stay beside the new ones.
      await write(dataset, ids[1], ['Kept beside the new run.']);
      await db.dataSource.transaction(async (tx) => {
        await index.lockDataset(tx, dataset.id);
        await index.replaceChunks(
          tx,
          target(dataset, ''),
          ids.map((documentId, d) => ({
            documentId,
            chunks: chunksOf([`New run ${d} about cats.`]),
            embeddings: null,
            unindexed: d > 0,
          })),
        );
      });
      const contents = async (id: string) => (await chunkRows(id)).map(({ content }) => content);
      expect(await contents(ids[0])).toEqual(['New run 0 about cats.']);
      expect(await contents(ids[1])).toEqual(['Kept beside the new run.', 'New run 1 about cats.']);
      expect(await contents(ids[2])).toEqual(['New run 2 about cats.']);
      expect((await storedStatistics(db.sql, dataset.seq)).df.owl).toBeUndefined();
      await expectConsistent(dataset);
    });
  });

  describe('writers under the shared lock', () => {
    it('write at once into one dataset, on the same terms, and leave the statistics exact', async () => {
      const { dataset, ids } = await datasetWith(12);
      // Every document shares its words with the others, in an order of its own.
      const words = ['alder', 'birch', 'cedar', 'dogwood', 'elm', 'fir', 'ginkgo', 'hazel'];
      const text = (i: number) => words.map((_, w) => words[(w * (i + 3)) % words.length]).join(' ');
      await write(dataset, ids[0], [text(100)]);
      const started: number[] = [];
      const writers = ids.slice(1).map((id, i) =>
        db.dataSource.transaction('READ COMMITTED', async (tx) => {
          await index.lockDataset(tx, dataset.id, { shared: true });
          started.push(i);
          await index.replaceChunks(
            tx,
            target(dataset, ''),
            [{ documentId: id, chunks: chunksOf([text(i), text(i + 1)]), embeddings: null }],
            { shared: true },
          );
          // Held open a moment, so that the writers overlap.
          await tx.query('SELECT pg_sleep(0.05)');
        }),
      );
      // A deletion meanwhile takes the lock exclusive and waits for the writers under way.
      const removed = remove(dataset, ids[0]);
      await Promise.all([...writers, removed]);
      expect(started).toHaveLength(11);
      await expectConsistent(dataset);
      expect((await storedStatistics(db.sql, dataset.seq)).df.alder).toBe(22);
    });

    it("refuses to decide a dataset's model under the shared lock", async () => {
      const { dataset, ids } = await datasetWith(1);
      const attempt = db.dataSource.transaction(async (tx) => {
        await index.lockDataset(tx, dataset.id, { shared: true });
        await index.replaceChunks(
          tx,
          target(dataset, ''),
          [
            {
              documentId: ids[0],
              chunks: chunksOf(['Owls']),
              embeddings: { name: FIXTURE_MODEL, dimensions: 3, vectors: [[1, 0, 0]] },
            },
          ],
          { shared: true },
        );
      });
      await expect(attempt).rejects.toBeInstanceOf(ExclusiveLockNeeded);
      expect(await chunkRows(ids[0])).toEqual([]);
    });
  });

  describe('postings of deleted chunks', () => {
    it('go with their dataset, deleted as the service deletes it', async () => {
      const { dataset, ids } = await datasetWith(2);
      await write(dataset, ids[0], ['Herons fish at dawn.']);
      await write(dataset, ids[1], ['Herons nest in reeds.']);
      const postings = async () =>
        (
          await db.sql.query(`SELECT count(*)::int AS n FROM chunk_terms WHERE dataset_seq = $1`, [
            dataset.seq,
          ])
        ).rows[0].n;
      expect(await postings()).toBeGreaterThan(0);
      // Postings have no foreign key (Citus and the ingestion's speed): the dataset's deletion takes them.
      const row = { id: dataset.id, seq: dataset.seq, accountId } as DatasetEntity;
      await db.dataSource.transaction((tx) => new DatasetsRepository(db.dataSource).delete(tx, row));
      expect(await postings()).toBe(0);
      expect(await chunkRows(ids[0])).toEqual([]);
    });
  });

  describe('removeDocumentChunks', () => {
    it('returns what the document counted for and puts the statistics back exactly as they were', async () => {
      const { dataset, ids } = await datasetWith(2);
      const [removed, kept] = ids;
      await write(dataset, kept, ['The cell membrane keeps the cell together.']);
      const before = await storedStatistics(db.sql, dataset.seq);
      await write(
        dataset,
        removed,
        ['Mitochondria produce energy for the cell.', 'Plants store energy.'],
        [
          [1, 0, 0],
          [0, 1, 0],
        ],
      );

      expect(await remove(dataset, removed)).toEqual({ chunks: 2, length: 7 });

      expect(await chunkRows(removed)).toEqual([]);
      expect(await storedStatistics(db.sql, dataset.seq)).toEqual(before);
      await expectConsistent(dataset);
      const { rows: orphans } = await db.sql.query(
        'SELECT 1 FROM chunk_terms p WHERE NOT EXISTS (SELECT FROM chunks c WHERE c.seq = p.chunk_seq)',
      );
      expect(orphans).toEqual([]);
    });

    it('returns nothing counted, and changes nothing, for a document without chunks', async () => {
      const { dataset, ids } = await datasetWith(2);
      await write(dataset, ids[0], ['alpha beta']);
      const before = await storedStatistics(db.sql, dataset.seq);
      const versions = await termVersions(db.sql, dataset.seq);
      expect(await remove(dataset, ids[1])).toEqual({ chunks: 0, length: 0 });
      expect(await storedStatistics(db.sql, dataset.seq)).toEqual(before);
      expect(await termVersions(db.sql, dataset.seq)).toEqual(versions);
    });

    it('leaves the statistics of another dataset alone', async () => {
      const first = await datasetWith(1);
      const second = await datasetWith(1);
      await write(first.dataset, first.ids[0], ['shared words here']);
      await write(second.dataset, second.ids[0], ['shared words there']);
      const untouched = await storedStatistics(db.sql, second.dataset.seq);
      await remove(first.dataset, first.ids[0]);
      expect(await storedStatistics(db.sql, first.dataset.seq)).toEqual({
        chunkCount: 0,
        totalLength: 0,
        df: {},
      });
      expect(await storedStatistics(db.sql, second.dataset.seq)).toEqual(untouched);
    });
  });

  describe('lockDataset', () => {
    it('holds a second writer of the dataset until the first commits, but not a writer of another dataset', async () => {
      const { dataset } = await datasetWith(0);
      const other = await insertDataset(db.sql, accountId);
      const first = db.dataSource.createQueryRunner();
      const second = db.dataSource.createQueryRunner();
      try {
        await first.startTransaction();
        await index.lockDataset(first.manager, dataset.id);
        await second.startTransaction();
        let locked = false;
        const waiting = index.lockDataset(second.manager, dataset.id).then(() => (locked = true));
        await until(async () => {
          const { rows } = await db.sql.query(
            `SELECT 1 FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
          );
          return rows.length > 0;
        }, 5_000);
        expect(locked).toBe(false);
        // Another dataset's lock is free meanwhile.
        await withDeadline(
          db.dataSource.transaction((tx) => index.lockDataset(tx, other.id)),
          5_000,
          () => new Error("waited for another dataset's lock"),
        );
        await first.commitTransaction();
        await waiting;
        expect(locked).toBe(true);
        await second.commitTransaction();
      } finally {
        if (first.isTransactionActive) await first.rollbackTransaction();
        if (second.isTransactionActive) await second.rollbackTransaction();
        await first.release();
        await second.release();
      }
    });
  });

  describe('ensureVectorIndex', () => {
    const vectorIndexes = async () =>
      (
        await db.sql.query<{ name: string; definition: string }>(
          `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
            WHERE tablename = 'chunks' AND indexname LIKE 'chunks_embedding_%' ORDER BY indexname`,
        )
      ).rows;

    it("creates a partial HNSW index of the dimension's half-precision vectors, once", async () => {
      await index.ensureVectorIndex(5);
      await index.ensureVectorIndex(5);
      const created = (await vectorIndexes()).filter(({ name }) => name === 'chunks_embedding_5_idx');
      expect(created).toHaveLength(1);
      expect(created[0].definition).toContain('USING hnsw (((embedding)::halfvec(5)) halfvec_cosine_ops)');
      expect(created[0].definition).toContain('WHERE (vector_dims(embedding) = 5)');
    });

    it('creates nothing for a dimension no index can take', async () => {
      const before = await vectorIndexes();
      for (const dimensions of [0, -3, 2.5, 4001, Number.NaN]) await index.ensureVectorIndex(dimensions);
      expect(await vectorIndexes()).toEqual(before);
    });
  });
});
