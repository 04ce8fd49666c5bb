import type { MigrationInterface, QueryRunner } from 'typeorm';
import { changedLexemeSource } from '../src/modules/chunk-index/lexeme-source.js';

/** Chunks read a statement while looking for those to index again. */
const PAGE = 2_000;

/**
 * BM25 lexemes are now taken from a chunk's `lexemeSource` (its letters in one Unicode form), as a
 * query's are. This indexes again the chunks whose lexemes that changes: their postings, length and
 * share of the dataset's statistics, as indexing writes them now. Without it, a query would find such
 * a chunk neither by the word written the usual way (`ﬁnance`, `é` decomposed) nor, as it did, by the
 * word as written there. The terms touched get new versions, so no process keeps their old postings.
 *
 * Only text beyond ASCII can change; in UTF-8, which the service requires (src/database/migrate.ts),
 * that is text of more bytes than characters. The migration takes the chunk lock (`ChunkIndexRepository.lockDataset`)
 * of every dataset that has such a chunk, then reads each such chunk of those datasets once, a page at
 * a time. Chunks a process of an older version indexes meanwhile into another dataset, or afterwards,
 * are indexed as it did, and are put right by reprocessing their document.
 */
export class UnicodeLexemes1732000000009 implements MigrationInterface {
  name = 'UnicodeLexemes1732000000009';

  async up(db: QueryRunner): Promise<void> {
    const datasets = (await db.query(
      `SELECT s.id, s.seq FROM datasets s
        WHERE EXISTS (SELECT FROM chunks c
                       WHERE c.dataset_seq = s.seq AND octet_length(c.content) > char_length(c.content))
        ORDER BY s.id`,
    )) as { id: string; seq: string }[];
    if (datasets.length === 0) return;
    for (const { id } of datasets) {
      await db.query(`SELECT pg_advisory_xact_lock(hashtextextended('dataset chunks ' || $1, 0))`, [id]);
    }
    await db.query(
      `CREATE TEMP TABLE relexed (seq bigint, dataset_seq bigint, old_length integer, new_length integer,
                                  lexemes tsvector) ON COMMIT DROP`,
    );
    // Only the datasets locked: chunks written since into another are left, as an older process's are.
    const locked = datasets.map(({ seq }) => seq);
    let after = '0';
    for (;;) {
      // In the order of the bigint (node-postgres gives it as a string), which `seq > $1` pages by.
      const chunks = (await db.query(
        `SELECT seq, content FROM chunks
          WHERE seq > $1 AND dataset_seq = ANY($2::bigint[]) AND octet_length(content) > char_length(content)
          ORDER BY seq LIMIT ${PAGE}`,
        [after, locked],
      )) as { seq: string; content: string }[];
      if (chunks.length === 0) return;
      after = chunks[chunks.length - 1].seq;
      const changed = chunks
        .map(({ seq, content }) => ({ seq, source: changedLexemeSource(content) }))
        .filter((chunk): chunk is { seq: string; source: string } => chunk.source !== null);
      if (changed.length > 0) {
        await indexAgain(
          db,
          changed.map(({ seq }) => seq),
          changed.map(({ source }) => source),
        );
      }
    }
  }

  async down(): Promise<void> {
    // The postings stay those of the lexeme sources: an older version finds those chunks by the
    // words written the usual way, and by the word as written in them once they are reprocessed.
  }
}

/** The chunks `seqs`, indexed again from `sources`: what `INSERT_CHUNKS` would write for them now. */
async function indexAgain(db: QueryRunner, seqs: string[], sources: string[]): Promise<void> {
  await db.query(`TRUNCATE relexed`);
  await db.query(
    `INSERT INTO relexed (seq, dataset_seq, old_length, new_length, lexemes)
     SELECT c.seq, c.dataset_seq, c.length,
            coalesce((SELECT sum(coalesce(array_length(l.positions, 1), 1)) FROM unnest(v.lexemes) l), 0),
            v.lexemes
       FROM unnest($1::bigint[], $2::text[]) AS i(seq, source)
       JOIN chunks c ON c.seq = i.seq JOIN datasets s ON s.seq = c.dataset_seq,
            LATERAL (SELECT to_tsvector(s.language, i.source) AS lexemes) v`,
    [seqs, sources],
  );
  // The old postings' share of the document frequencies goes, as `removeDocumentChunks` takes it (a
  // copy: the statistics' rules are the schema's of this migration, whatever that function becomes;
  // the lexemes, by contrast, must be those indexing takes now, hence `changedLexemeSource` imported).
  await db.query(
    `WITH gone AS (
       SELECT p.dataset_seq, p.term, count(*)::int AS n
         FROM relexed r JOIN chunk_terms p ON p.chunk_seq = r.seq
        GROUP BY p.dataset_seq, p.term
     ), emptied AS (
       DELETE FROM term_stats t USING gone g
        WHERE t.dataset_seq = g.dataset_seq AND t.term = g.term AND t.df = g.n
     )
     UPDATE term_stats t SET df = t.df - g.n, version = nextval('term_stats_version')
       FROM gone g
      WHERE t.dataset_seq = g.dataset_seq AND t.term = g.term AND t.df <> g.n`,
  );
  await db.query(`DELETE FROM chunk_terms p USING relexed r WHERE p.chunk_seq = r.seq`);
  // The new ones come, as `INSERT_CHUNKS` writes them.
  await db.query(
    `UPDATE chunks c SET length = r.new_length FROM relexed r WHERE c.seq = r.seq AND c.length <> r.new_length`,
  );
  await db.query(
    `INSERT INTO chunk_terms (dataset_seq, term, chunk_seq, tf, length)
     SELECT r.dataset_seq, l.lexeme, r.seq, coalesce(array_length(l.positions, 1), 1), r.new_length
       FROM relexed r, unnest(r.lexemes) l`,
  );
  await db.query(
    `INSERT INTO term_stats AS t (dataset_seq, term, df)
     SELECT r.dataset_seq, l.lexeme, count(*) FROM relexed r, unnest(r.lexemes) l
      GROUP BY r.dataset_seq, l.lexeme
     ON CONFLICT (dataset_seq, term)
     DO UPDATE SET df = t.df + excluded.df, version = nextval('term_stats_version')`,
  );
  // The totals are the datasets' rows' until migration 16 moves them to `dataset_index`; a later run of
  // this one (a restored database's, or a test's) finds them there.
  const [{ moved }] = (await db.query(`SELECT to_regclass('dataset_index') IS NOT NULL AS moved`)) as {
    moved: boolean;
  }[];
  await db.query(
    moved
      ? `UPDATE dataset_index s SET total_chunk_length = s.total_chunk_length + d.delta
           FROM (SELECT dataset_seq, sum(new_length - old_length) AS delta FROM relexed GROUP BY dataset_seq) d
          WHERE s.dataset_seq = d.dataset_seq AND d.delta <> 0`
      : `UPDATE datasets s SET total_chunk_length = s.total_chunk_length + d.delta
           FROM (SELECT dataset_seq, sum(new_length - old_length) AS delta FROM relexed GROUP BY dataset_seq) d
          WHERE s.seq = d.dataset_seq AND d.delta <> 0`,
  );
}
