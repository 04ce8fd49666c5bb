import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * BM25 lexemes are now taken from the NFKC form of a chunk's text, as a query's are
 * (`lexemeSource`). This indexes again the chunks whose text is not in that form: their postings,
 * length and share of the dataset's statistics, as indexing would write them now. Without it, a
 * query would no longer find such a chunk by the word as written there (`ﬁnance`, or `é` decomposed),
 * nor by the word normalised. The terms touched get new versions, so no process keeps their old
 * postings. It reads every chunk's text once to find them (PostgreSQL's `IS NFKC NORMALIZED`), and
 * holds the chunk lock of each dataset that has any (`lockDatasetChunks`) while it writes. Chunks an
 * older process writes afterwards are indexed as it did, and are put right by reprocessing their
 * document.
 */
export class NfkcLexemes1732000000009 implements MigrationInterface {
  name = 'NfkcLexemes1732000000009';

  async up(db: QueryRunner): Promise<void> {
    const datasets = (await db.query(
      `SELECT s.id, s.seq FROM datasets s
        WHERE EXISTS (SELECT FROM chunks c WHERE c.dataset_seq = s.seq AND c.content IS NOT NFKC NORMALIZED)
        ORDER BY s.id`,
    )) as { id: string; seq: string }[];
    if (datasets.length === 0) return;
    for (const { id } of datasets) {
      await db.query(`SELECT pg_advisory_xact_lock(hashtextextended('dataset chunks ' || $1, 0))`, [id]);
    }
    await db.query(
      `CREATE TEMP TABLE renormalised ON COMMIT DROP AS
       SELECT c.seq, c.dataset_seq, c.length AS old_length, a.lexemes,
              coalesce((SELECT sum(coalesce(array_length(l.positions, 1), 1)) FROM unnest(a.lexemes) l), 0)::int
                AS new_length
         FROM chunks c JOIN datasets s ON s.seq = c.dataset_seq,
              LATERAL (SELECT to_tsvector(s.language, normalize(c.content, NFKC)) AS lexemes) a
        WHERE c.dataset_seq = ANY($1::bigint[]) AND c.content IS NOT NFKC NORMALIZED`,
      [datasets.map(({ seq }) => seq)],
    );
    // The old postings' share of the document frequencies goes, as `removeDocumentChunks` takes it.
    await db.query(
      `WITH gone AS (
         SELECT p.dataset_seq, p.term, count(*)::int AS n
           FROM renormalised r JOIN chunk_terms p ON p.chunk_seq = r.seq
          GROUP BY p.dataset_seq, p.term
       ), emptied AS (
         DELETE FROM term_stats t USING gone g
          WHERE t.dataset_seq = g.dataset_seq AND t.term = g.term AND t.df = g.n
       )
       UPDATE term_stats t SET df = t.df - g.n, version = nextval('term_stats_version')
         FROM gone g
        WHERE t.dataset_seq = g.dataset_seq AND t.term = g.term AND t.df <> g.n`,
    );
    await db.query(`DELETE FROM chunk_terms p USING renormalised r WHERE p.chunk_seq = r.seq`);
    // The new ones come, as indexing writes them (`INSERT_CHUNKS`).
    await db.query(
      `UPDATE chunks c SET length = r.new_length FROM renormalised r
        WHERE c.seq = r.seq AND c.length <> r.new_length`,
    );
    await db.query(
      `INSERT INTO chunk_terms (dataset_seq, term, chunk_seq, tf, length)
       SELECT r.dataset_seq, l.lexeme, r.seq, coalesce(array_length(l.positions, 1), 1), r.new_length
         FROM renormalised r, unnest(r.lexemes) l`,
    );
    await db.query(
      `INSERT INTO term_stats AS t (dataset_seq, term, df)
       SELECT r.dataset_seq, l.lexeme, count(*) FROM renormalised r, unnest(r.lexemes) l
        GROUP BY r.dataset_seq, l.lexeme
       ON CONFLICT (dataset_seq, term)
       DO UPDATE SET df = t.df + excluded.df, version = nextval('term_stats_version')`,
    );
    await db.query(
      `UPDATE datasets s SET total_chunk_length = s.total_chunk_length + d.delta
         FROM (SELECT dataset_seq, sum(new_length - old_length) AS delta FROM renormalised GROUP BY dataset_seq) d
        WHERE s.seq = d.dataset_seq AND d.delta <> 0`,
    );
  }

  async down(): Promise<void> {
    // The postings stay those of the NFKC text: an older version finds those chunks by their
    // normalised words, and no longer by the word as written in them until they are reprocessed.
  }
}
