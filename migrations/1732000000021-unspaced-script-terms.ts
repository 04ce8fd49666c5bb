import type { MigrationInterface, QueryRunner } from 'typeorm';
import { lexemeSource } from '../src/modules/chunk-index/lexeme-source.js';

/** Terms read a statement while looking for those to cut, and chunks indexed again a statement. */
const PAGE = 2_000;

/**
 * Text of the scripts written without spaces (Chinese, Japanese, Thai, Lao, Khmer, Myanmar) is now cut
 * into pairs of characters before PostgreSQL's parser reads it (`lexemeSource`), as queries are. The
 * stored postings hold such a run as one term (`東京都庁`), which no query cut into pairs would match.
 *
 * The chunks' text is not all there is to index (their context, the title and headings, is not
 * stored), so the migration works from the postings themselves: each term that `lexemeSource` changes
 * is replaced by the lexemes of its cut (`東京 京都 都庁`), each with the term's count, which is what
 * indexing the chunk now writes for it. A chunk that holds such a term is indexed again with the
 * others it holds: its postings, length and share of the dataset's statistics, as migration 9 does,
 * and every term it holds gets a new version, so no process keeps its old postings. Where a run was
 * part of a hyphenated compound, the compound's parts are counted twice; reprocessing the document
 * indexes it exactly.
 *
 * A term whose Latin letters touched a run was stemmed whole (`東京running` stored as `東京run`): its
 * cut is stemmed again, which a stemmer may not leave as reprocessing would.
 *
 * Candidate terms are those beyond ASCII (more bytes than characters), read in the key's own order so
 * that each page walks the index. The migration takes the chunk lock of every dataset that has one, as
 * migration 9 does. Chunks that a process of an older version indexes meanwhile into another dataset,
 * or afterwards, are indexed as it did, and are put right by reprocessing their document.
 */
export class UnspacedScriptTerms1732000000021 implements MigrationInterface {
  name = 'UnspacedScriptTerms1732000000021';

  async up(db: QueryRunner): Promise<void> {
    const datasets = (await db.query(
      `SELECT s.id, s.seq FROM datasets s
        WHERE EXISTS (SELECT FROM term_stats t
                       WHERE t.dataset_seq = s.seq AND octet_length(t.term) > char_length(t.term))
        ORDER BY s.id`,
    )) as { id: string; seq: string }[];
    if (datasets.length === 0) return;
    for (const { id } of datasets) {
      await db.query(`SELECT pg_advisory_xact_lock(hashtextextended('dataset chunks ' || $1, 0))`, [id]);
    }
    await db.query(`CREATE TEMP TABLE cut_terms (dataset_seq bigint, term text) ON COMMIT DROP`);
    await db.query(
      `CREATE TEMP TABLE cut_lexemes (dataset_seq bigint, term text, lexeme text, n integer) ON COMMIT DROP`,
    );
    for (const { seq } of datasets) await this.cutTerms(db, seq);
    await db.query(`CREATE INDEX ON cut_terms (dataset_seq, term)`);
    await db.query(`CREATE INDEX ON cut_lexemes (dataset_seq, term)`);
    await db.query(`ANALYZE cut_terms`);
    await db.query(`ANALYZE cut_lexemes`);

    await db.query(
      `CREATE TEMP TABLE affected ON COMMIT DROP AS
       SELECT DISTINCT p.chunk_seq AS seq FROM cut_terms c
         JOIN chunk_terms p ON p.dataset_seq = c.dataset_seq AND p.term = c.term`,
    );
    await db.query(`CREATE INDEX ON affected (seq)`);
    await db.query(
      `CREATE TEMP TABLE relexed (seq bigint, dataset_seq bigint, old_length integer, new_length integer)
       ON COMMIT DROP`,
    );
    await db.query(
      `CREATE TEMP TABLE relexed_terms (chunk_seq bigint, dataset_seq bigint, term text, tf integer)
       ON COMMIT DROP`,
    );
    let after = '0';
    for (;;) {
      const page = (
        (await db.query(`SELECT seq FROM affected WHERE seq > $1 ORDER BY seq LIMIT ${PAGE}`, [after])) as {
          seq: string;
        }[]
      ).map(({ seq }) => seq);
      if (page.length === 0) return;
      after = page[page.length - 1];
      await indexAgain(db, page);
    }
  }

  async down(): Promise<void> {
    // The postings stay those of the cut: an older version finds such text by its pairs' terms no more,
    // as before, until the documents are reprocessed.
  }

  /** The dataset's terms that `lexemeSource` changes, with the lexemes of their cut in its language. */
  private async cutTerms(db: QueryRunner, datasetSeq: string): Promise<void> {
    let after = '';
    for (;;) {
      const terms = (
        (await db.query(
          `SELECT term FROM term_stats
            WHERE dataset_seq = $1 AND term > $2 AND octet_length(term) > char_length(term)
            ORDER BY term LIMIT ${PAGE}`,
          [datasetSeq, after],
        )) as { term: string }[]
      ).map(({ term }) => term);
      if (terms.length === 0) return;
      after = terms[terms.length - 1];
      const cut = terms.filter((term) => lexemeSource(term) !== term);
      if (cut.length === 0) continue;
      await db.query(`INSERT INTO cut_terms SELECT $1, unnest($2::text[])`, [datasetSeq, cut]);
      await db.query(
        `INSERT INTO cut_lexemes (dataset_seq, term, lexeme, n)
         SELECT s.seq, i.term, l.lexeme, coalesce(array_length(l.positions, 1), 1)
           FROM datasets s, unnest($2::text[], $3::text[]) AS i(term, source),
                unnest(to_tsvector(s.language, i.source)) l
          WHERE s.seq = $1`,
        [datasetSeq, cut, cut.map(lexemeSource)],
      );
    }
  }
}

/**
 * The chunks `seqs` indexed again: their postings with each cut term replaced by its lexemes (counted
 * at most 255 times in a chunk, as `tsvector` counts), then written as migration 9 writes them.
 */
async function indexAgain(db: QueryRunner, seqs: string[]): Promise<void> {
  await db.query(`TRUNCATE relexed, relexed_terms`);
  await db.query(
    `INSERT INTO relexed_terms (chunk_seq, dataset_seq, term, tf)
     SELECT chunk_seq, dataset_seq, term, least(sum(tf), 255)
       FROM (SELECT p.chunk_seq, p.dataset_seq, p.term, p.tf FROM chunk_terms p
              WHERE p.chunk_seq = ANY($1::bigint[])
                AND NOT EXISTS (SELECT FROM cut_terms c WHERE c.dataset_seq = p.dataset_seq AND c.term = p.term)
             UNION ALL
             SELECT p.chunk_seq, p.dataset_seq, x.lexeme, p.tf * x.n FROM chunk_terms p
               JOIN cut_lexemes x ON x.dataset_seq = p.dataset_seq AND x.term = p.term
              WHERE p.chunk_seq = ANY($1::bigint[])) u
      GROUP BY chunk_seq, dataset_seq, term`,
    [seqs],
  );
  await db.query(
    `INSERT INTO relexed (seq, dataset_seq, old_length, new_length)
     SELECT c.seq, c.dataset_seq, c.length, coalesce(r.length, 0)
       FROM chunks c
       LEFT JOIN (SELECT chunk_seq, sum(tf) AS length FROM relexed_terms GROUP BY chunk_seq) r ON r.chunk_seq = c.seq
      WHERE c.seq = ANY($1::bigint[])`,
    [seqs],
  );
  // Temporary tables have no statistics but those taken: without them, a page's joins are planned blind.
  await db.query(`ANALYZE relexed, relexed_terms`);
  // The old postings' share of the document frequencies goes, as in migration 9.
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
  await db.query(
    `UPDATE chunks c SET length = r.new_length FROM relexed r WHERE c.seq = r.seq AND c.length <> r.new_length`,
  );
  await db.query(
    `INSERT INTO chunk_terms (dataset_seq, term, chunk_seq, tf, length)
     SELECT t.dataset_seq, t.term, t.chunk_seq, t.tf, r.new_length
       FROM relexed_terms t JOIN relexed r ON r.seq = t.chunk_seq
      ORDER BY t.dataset_seq, t.term, t.chunk_seq`,
  );
  await db.query(
    `INSERT INTO term_stats AS t (dataset_seq, term, df)
     SELECT dataset_seq, term, count(*) FROM relexed_terms GROUP BY dataset_seq, term ORDER BY dataset_seq, term
     ON CONFLICT (dataset_seq, term)
     DO UPDATE SET df = t.df + excluded.df, version = nextval('term_stats_version')`,
  );
  await db.query(
    `UPDATE dataset_index s SET total_chunk_length = s.total_chunk_length + d.delta
       FROM (SELECT dataset_seq, sum(new_length - old_length) AS delta FROM relexed GROUP BY dataset_seq) d
      WHERE s.dataset_seq = d.dataset_seq AND d.delta <> 0`,
  );
}
