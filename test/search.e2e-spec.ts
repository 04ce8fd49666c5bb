import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import pg from 'pg';
import { addDocument, createDataset, ingest, waitForDocument } from './utils/documents.js';
import { type FakeOpenAI, openAiEnv, startFakeOpenAI, unitVector } from './utils/fake-openai.js';
import { lexemeSource } from 'src/modules/chunk-index/lexeme-source.js';
import { healthWhile, scifactAbstracts } from './utils/responsiveness.js';
import { bearer, type CreatedKey, runUntilExit, startTestApp, type TestApp } from './utils/test-app.js';
import { until } from './utils/until.js';
import { itOnOnePostgres, ON_CITUS, placementOf } from './utils/topology.js';

interface Result {
  chunk_id: string;
  content: string;
  score: number;
  document_id: string;
  metadata: Record<string, unknown>;
  filename: string | null;
  title: string | null;
  chunk_index: number;
  char_start: number;
  char_end: number;
  page: number | null;
  keyword_score?: number;
  keyword_rank?: number;
  semantic_score?: number;
  semantic_rank?: number;
  rerank_score?: number;
  fusion_score?: number;
  score_basis?: string;
}

const CORPUS = [
  'The mitochondria is the powerhouse of the cell and produces energy.',
  'Cells divide by mitosis; mitosis produces two identical cells.',
  'Energy production in cells depends on oxygen and glucose.',
  'The cell membrane controls what enters and leaves the cell.',
  'Photosynthesis in plants converts light energy into chemical energy.',
  'Proteins are made by ribosomes following instructions in RNA.',
  'A healthy diet gives the body energy; exercise spends it.',
  'Stock markets fell sharply on Tuesday after the announcement.',
];

describe('Keyword search (BM25)', () => {
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;

  beforeAll(async () => {
    t = await startTestApp({ EMBEDDING_PROVIDER: 'none' });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    await ingest(
      t,
      key,
      datasetId,
      CORPUS.map((content, i) => ({ content, metadata: { n: i } })),
    );
  });
  afterAll(() => t.close());

  const query = (body: object, as: CreatedKey | null = key) => {
    const request = t.http.post('/v1/mcp/query');
    if (as) request.set(bearer(as));
    return request.send({ dataset_id: datasetId, ...body });
  };

  /** Each text's lexemes by PostgreSQL's `english` analyser, from its `lexemeSource`. */
  async function lexemes(texts: string[]): Promise<{ lexeme: string; positions: number[] }[][]> {
    const { rows } = await t.sql.query<{ lexemes: { lexeme: string; positions: number[] }[] | null }>(
      `SELECT (SELECT json_agg(json_build_object('lexeme', l.lexeme, 'positions', l.positions))
                 FROM unnest(to_tsvector('english', t.text)) l) AS lexemes
         FROM unnest($1::text[]) WITH ORDINALITY AS t(text, i) ORDER BY t.i`,
      [texts.map(lexemeSource)],
    );
    return rows.map((row) => row.lexemes ?? []);
  }

  /** Okapi BM25 computed here, independently, from the lexemes of the chunks' text and the query's. */
  async function referenceBm25(
    text: string,
    dataset = datasetId,
    k1 = 1.2,
    b = 0.6,
  ): Promise<Map<string, number>> {
    const { rows: chunks } = await t.sql.query<{ id: string; content: string }>(
      `SELECT c.id, c.content FROM chunks c JOIN documents d ON d.dataset_seq = c.dataset_seq AND d.id = c.document_id WHERE d.dataset_id = $1`,
      [dataset],
    );
    const chunkLexemes = await lexemes(chunks.map((c) => c.content));
    const terms = new Set((await lexemes([text]))[0].map((l) => l.lexeme));
    const docs = chunks.map((c, i) => {
      const tf = new Map(chunkLexemes[i].map((l) => [l.lexeme, l.positions.length]));
      return { id: c.id, tf, length: [...tf.values()].reduce((s, x) => s + x, 0) };
    });
    const n = docs.length;
    const avgdl = docs.reduce((s, d) => s + d.length, 0) / n;
    const scores = new Map<string, number>();
    for (const lexeme of terms) {
      const df = docs.filter((d) => d.tf.has(lexeme)).length;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      for (const d of docs) {
        const tf = d.tf.get(lexeme);
        if (!tf) continue;
        const part = (idf * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * d.length) / avgdl));
        scores.set(d.id, (scores.get(d.id) ?? 0) + part);
      }
    }
    return scores;
  }

  it('scores exactly as an independent BM25 computation, to 1e-6, in the same order', async () => {
    for (const text of [
      'energy in the cell',
      'mitosis produces cells',
      'diet and exercise',
      'stock market',
    ]) {
      const response = await query({ query: text, mode: 'keyword', limit: 50, explain: true }).expect(200);
      const results = response.body.results as Result[];
      const reference = await referenceBm25(text);
      expect(results).toHaveLength(reference.size);
      const expectedOrder = [...reference.entries()].sort((a, b) => b[1] - a[1]);
      results.forEach((result, i) => {
        expect(Math.abs(result.keyword_score! - reference.get(result.chunk_id)!)).toBeLessThan(1e-6);
        expect(Math.abs(result.keyword_score! - expectedOrder[i][1])).toBeLessThan(1e-6);
        expect(result.keyword_rank).toBe(i + 1);
      });
    }
  });

  it('stays exact as documents come and go, though the server keeps postings in memory', async () => {
    const own = await createDataset(t.http, key);
    const ids = await ingest(
      t,
      key,
      own,
      CORPUS.map((content) => ({ content })),
    );
    const text = 'energy in the cell';
    const expectExact = async () => {
      const response = await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: own, query: text, mode: 'keyword', limit: 50, explain: true })
        .expect(200);
      const results = response.body.results as Result[];
      const reference = await referenceBm25(text, own);
      expect(results.map((r) => r.chunk_id).sort()).toEqual([...reference.keys()].sort());
      for (const result of results) {
        expect(Math.abs(result.keyword_score! - reference.get(result.chunk_id)!)).toBeLessThan(1e-6);
      }
      // The stored document frequencies are the postings' own counts.
      const { rows } = await t.sql.query(
        `SELECT t.term, t.df, (SELECT count(*)::int FROM chunk_terms p
                                 WHERE p.dataset_seq = t.dataset_seq AND p.term = t.term) AS postings
           FROM term_stats t JOIN datasets d ON d.seq = t.dataset_seq WHERE d.id = $1`,
        [own],
      );
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) expect([row.term, row.df]).toEqual([row.term, row.postings]);
      expect(rows.filter((row) => row.df === 0)).toEqual([]);
      return results;
    };

    const before = await expectExact();
    const [added] = await ingest(t, key, own, [{ content: 'Cell energy: the cell stores energy as ATP.' }]);
    const grown = await expectExact();
    expect(grown.map((r) => r.document_id)).toContain(added);
    expect(grown).toHaveLength(before.length + 1);

    await t.http.delete(`/v1/datasets/${own}/documents/${ids[0]}`).set(bearer(key)).expect(204);
    const shrunk = await expectExact();
    expect(shrunk.map((r) => r.document_id)).not.toContain(ids[0]);

    await t.http.post(`/v1/datasets/${own}/documents/${ids[2]}/reprocess`).set(bearer(key)).expect(200);
    await waitForDocument(t.http, key, own, ids[2]);
    await expectExact();
  });

  it('forgets a term whose last chunk goes, and finds it again when it comes back', async () => {
    const own = await createDataset(t.http, key);
    const [first] = await ingest(t, key, own, [
      { content: 'Mitochondria make energy.' },
      { content: 'Energy.' },
    ]);
    const found = async () => {
      const response = await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: own, query: 'mitochondria', mode: 'keyword' })
        .expect(200);
      return (response.body.results as Result[]).map((r) => r.document_id);
    };
    const termRows = async () =>
      (
        await t.sql.query(
          `SELECT t.df FROM term_stats t JOIN datasets d ON d.seq = t.dataset_seq
            WHERE d.id = $1 AND t.term = 'mitochondria'`,
          [own],
        )
      ).rows;
    expect(await found()).toEqual([first]); // its postings are now in the server's memory
    expect(await termRows()).toEqual([{ df: 1 }]);

    await t.http.delete(`/v1/datasets/${own}/documents/${first}`).set(bearer(key)).expect(204);
    expect(await termRows()).toEqual([]);
    expect(await found()).toEqual([]);

    const [again] = await ingest(t, key, own, [{ content: 'Mitochondria again.' }]);
    expect(await termRows()).toEqual([{ df: 1 }]);
    expect(await found()).toEqual([again]);
  });

  it('ranks the same whatever postings the server holds in memory', async () => {
    // Six chunks holding three terms at each permutation of the frequencies 1, 2 and 3 (and one chunk
    // of other words): their scores are mathematically equal, and as sums of floats they differ in
    // the last bit according to the order the terms are added in.
    const words = ['apple', 'banana', 'cherry'];
    const permutations = [
      [1, 2, 3],
      [1, 3, 2],
      [2, 1, 3],
      [2, 3, 1],
      [3, 1, 2],
      [3, 2, 1],
    ];
    const contents = [
      ...permutations.map((tfs) => words.flatMap((word, i) => Array<string>(tfs[i]).fill(word)).join(' ')),
      'dog horse sheep goat mouse camel',
    ];
    const ranking = async (remembered: string | null) => {
      const own = await createDataset(t.http, key);
      // One at a time: equal scores rank by chunk, so each dataset numbers its chunks in one order.
      for (const content of contents) await addDocument(t.http, key, own, { content });
      const search = (text: string) =>
        t.http
          .post('/v1/mcp/query')
          .set(bearer(key))
          .send({ dataset_id: own, query: text, mode: 'keyword', limit: 10, explain: true })
          .expect(200);
      if (remembered) await search(remembered); // that term's postings are now in memory, the others not
      const results = (await search(words.join(' '))).body.results as Result[];
      return results.map((r) => [r.content, r.keyword_score]);
    };
    const cold = await ranking(null);
    expect(cold).toHaveLength(6);
    expect(await ranking('cherry')).toEqual(cold);
    expect(await ranking('banana')).toEqual(cold);
    expect(await ranking('apple')).toEqual(cold);
  });

  const UNICODE_CORPUS = [
    'Résumé writing for a café job'.normalize('NFD'), // e and a combining accent, as macOS writes it
    'The ﬁnancial oﬃce closed early', // ligatures
    'Ｔｏｋｙｏ branch hours in ２０２４', // full-width letters and digits
    'An ordinary résumé of the café',
    'Dose of 5 µg a day', // the micro sign
    'Infor\u00ADmation behind a soft hyphen', // a soft hyphen, where the parser ended the word
    'Our results¹ were measured with Acme™ tools', // a footnote marker and a symbol
  ];
  const found = async (dataset: string, text: string) => {
    const response = await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: dataset, query: text, mode: 'keyword', limit: 10, explain: true })
      .expect(200);
    return response.body.results as Result[];
  };
  const contents = async (dataset: string, text: string) =>
    (await found(dataset, text)).map((r) => r.content).sort();
  /** The words each line of the corpus must be found by, typed the usual way and as the chunk has them. */
  const expectUnicodeMatches = async (dataset: string) => {
    const resumes = [UNICODE_CORPUS[3], UNICODE_CORPUS[0]];
    expect(await contents(dataset, 'résumé café')).toEqual(resumes);
    expect(await contents(dataset, 'résumé café'.normalize('NFD'))).toEqual(resumes);
    expect(await contents(dataset, 'financial office')).toEqual([UNICODE_CORPUS[1]]);
    expect(await contents(dataset, 'ﬁnancial')).toEqual([UNICODE_CORPUS[1]]);
    expect(await contents(dataset, 'tokyo 2024')).toEqual([UNICODE_CORPUS[2]]);
    expect(await contents(dataset, 'μg')).toEqual([UNICODE_CORPUS[4]]); // Greek mu
    expect(await contents(dataset, 'information')).toEqual([UNICODE_CORPUS[5]]);
    expect(await contents(dataset, 'results')).toEqual([UNICODE_CORPUS[6]]);
    expect(await contents(dataset, 'acme')).toEqual([UNICODE_CORPUS[6]]);
  };
  /** `text`'s keyword scores are the reference computation's, to 1e-6. */
  const expectReferenceScores = async (dataset: string, text: string) => {
    const results = await found(dataset, text);
    const reference = await referenceBm25(text, dataset);
    expect(results).toHaveLength(reference.size);
    for (const result of results) {
      expect(Math.abs(result.keyword_score! - reference.get(result.chunk_id)!)).toBeLessThan(1e-6);
    }
  };
  /** A dataset of UNICODE_CORPUS, a document a line. */
  const unicodeDataset = async () => {
    const dataset = await createDataset(t.http, key);
    await ingest(
      t,
      key,
      dataset,
      UNICODE_CORPUS.map((content) => ({ content })),
    );
    return dataset;
  };
  /** Every term's df is its number of postings; the dataset's total length is its chunks'. */
  const expectExactStatistics = async (dataset: string) => {
    const { rows } = await t.sql.query(
      `SELECT (SELECT count(*)::int FROM term_stats t
                WHERE t.dataset_seq = s.seq
                  AND t.df <> (SELECT count(*) FROM chunk_terms p
                                WHERE p.dataset_seq = t.dataset_seq AND p.term = t.term)) AS wrong_df,
              s.total_chunk_length::int AS total,
              (SELECT sum(length)::int FROM chunks WHERE dataset_seq = s.seq) AS lengths
         FROM (SELECT dataset_seq AS seq, total_chunk_length FROM dataset_index WHERE dataset_id = $1) s`,
      [dataset],
    );
    expect(rows[0].wrong_df).toBe(0);
    expect(rows[0].total).toBe(rows[0].lengths);
  };

  it('matches a word however Unicode writes it, and keeps marks beside words apart', async () => {
    const own = await unicodeDataset();
    await expectUnicodeMatches(own);
    // The content is shown as it was written.
    expect((await found(own, 'tokyo'))[0].content).toBe(UNICODE_CORPUS[2]);
    await expectReferenceScores(own, 'résumé office tokyo results');
    await expectExactStatistics(own);
  });

  /** Indexes dataset `seq` again as earlier versions did: lexemes from its chunks' text as written. */
  const indexAsWritten = async (seq: string) => {
    for (const statement of [
      `DELETE FROM term_stats WHERE dataset_seq = $1`,
      `DELETE FROM chunk_terms WHERE dataset_seq = $1`,
      `UPDATE chunks c SET length = coalesce((SELECT sum(array_length(l.positions, 1))
                                                   FROM unnest(to_tsvector('english', c.content)) l), 0)
          WHERE dataset_seq = $1`,
      `INSERT INTO chunk_terms (dataset_seq, term, chunk_seq, tf, length)
         SELECT c.dataset_seq, l.lexeme, c.seq, array_length(l.positions, 1), c.length
           FROM chunks c, unnest(to_tsvector('english', c.content)) l WHERE c.dataset_seq = $1`,
      `INSERT INTO term_stats (dataset_seq, term, df)
         SELECT dataset_seq, term, count(*) FROM chunk_terms WHERE dataset_seq = $1 GROUP BY dataset_seq, term`,
      `UPDATE dataset_index SET total_chunk_length = (SELECT sum(length) FROM chunks WHERE dataset_seq = $1),
                                  chunk_count = (SELECT count(*) FROM chunks WHERE dataset_seq = $1)
          WHERE dataset_seq = $1`,
    ]) {
      await t.sql.query(statement, [seq]);
    }
  };

  // Migration 9 runs again here on tables Citus has since distributed: not a path a Citus database takes.
  itOnOnePostgres(
    'indexes again, at migration 9, the chunks an earlier version indexed from text as written',
    async () => {
      const own = await unicodeDataset();
      // More chunks than the migration reads a page, so that their seqs run past 999 and 1000 in a page
      // (a page in text order, 1000 before 999, skipped some: found in review).
      const [{ seq }] = (await t.sql.query(`SELECT seq FROM datasets WHERE id = $1`, [own])).rows;
      await t.sql.query(
        `INSERT INTO chunks (id, document_id, dataset_seq, ordinal, content, token_count, char_start, char_end, length)
       SELECT 'chk_filler' || g, d.id, $1, 1000 + g, 'Filler ﬂuid', 2, 0, 11, 0
         FROM generate_series(1, 2100) g, (SELECT id FROM documents WHERE dataset_id = $2 LIMIT 1) d`,
        [seq, own],
      );
      // The dataset indexed again as earlier versions did: from the text as written.
      await indexAsWritten(seq);
      expect(await contents(own, 'financial office')).toEqual([]); // 'ﬁnancial' and 'oﬃc' in the index
      const postingsOfTerm = async (term: string) =>
        (
          await t.sql.query(
            `SELECT count(*)::int AS n FROM chunk_terms WHERE dataset_seq = $1 AND term = $2`,
            [seq, term],
          )
        ).rows[0].n;
      expect(await postingsOfTerm('ﬂuid')).toBe(2100);
      const versions = async () =>
        new Map(
          (
            await t.sql.query(
              `SELECT term, version::bigint AS version FROM term_stats WHERE dataset_seq = $1`,
              [seq],
            )
          ).rows.map((row) => [row.term as string, BigInt(row.version as string)]),
        );
      const before = await versions();
      const newest = [...before.values()].reduce((a, b) => (a > b ? a : b));
      const postingsOf = async (content: string) =>
        (
          await t.sql.query(
            `SELECT p.term, p.tf, p.length FROM chunk_terms p JOIN chunks c ON c.dataset_seq = p.dataset_seq AND c.seq = p.chunk_seq
            WHERE c.dataset_seq = $1 AND c.content = $2 ORDER BY p.term`,
            [seq, content],
          )
        ).rows;
      const unchanged = await postingsOf(UNICODE_CORPUS[6]); // its lexeme source is its content

      await t.sql.query(`DELETE FROM schema_migrations WHERE name = 'UnicodeLexemes1732000000009'`);
      expect(await t.cli('migrate')).toEqual({ applied: ['UnicodeLexemes1732000000009'] });

      await expectUnicodeMatches(own);
      await expectReferenceScores(own, 'résumé office tokyo dose');
      await expectExactStatistics(own);
      expect(await postingsOf(UNICODE_CORPUS[6])).toEqual(unchanged);
      expect([await postingsOfTerm('ﬂuid'), await postingsOfTerm('fluid')]).toEqual([0, 2100]);
      // A term whose postings changed has a newer version, so no process keeps its old postings; one
      // whose postings did not keeps its version.
      const after = await versions();
      for (const { lexeme } of (await lexemes(['financial office fluid filler']))[0]) {
        expect([lexeme, after.get(lexeme)! > newest]).toEqual([lexeme, true]);
      }
      expect(after.get('acm')).toBe(before.get('acm'));
    },
  );

  const UNSPACED_CORPUS = [
    '全文检索引擎把文档切分成词语，再建立倒排索引。', // Chinese
    '東京都庁は新宿にあります。東京の天気は晴れです。', // Japanese: kanji and kana
    'ビール瓶を買いに行きました', // Katakana, kanji and Hiragana in one run
    'สวัสดีครับ ยินดีต้อนรับ', // Thai
    'The iPhone発売 was covered in Tokyo', // a Latin word touching a Han run
    'Plain English text about search engines',
  ];
  /** A dataset of UNSPACED_CORPUS, a document a line; and its postings, chunk by chunk. */
  const unspacedDataset = async () => {
    const dataset = await createDataset(t.http, key);
    await ingest(
      t,
      key,
      dataset,
      UNSPACED_CORPUS.map((content) => ({ content })),
    );
    const postings = async () =>
      (
        await t.sql.query(
          `SELECT c.content, p.term, p.tf, p.length FROM chunk_terms p JOIN chunks c ON c.dataset_seq = p.dataset_seq AND c.seq = p.chunk_seq
            WHERE c.dataset_seq = (SELECT seq FROM datasets WHERE id = $1) ORDER BY c.content, p.term`,
          [dataset],
        )
      ).rows;
    return { dataset, postings };
  };
  const expectUnspacedMatches = async (dataset: string) => {
    expect(await contents(dataset, '检索')).toEqual([UNSPACED_CORPUS[0]]);
    expect(await contents(dataset, '倒排索引')).toEqual([UNSPACED_CORPUS[0]]);
    expect(await contents(dataset, '東京の天気')).toEqual([UNSPACED_CORPUS[1]]);
    expect(await contents(dataset, 'ビール')).toEqual([UNSPACED_CORPUS[2]]);
    expect(await contents(dataset, 'ยินดี')).toEqual([UNSPACED_CORPUS[3]]);
    expect(await contents(dataset, '発売')).toEqual([UNSPACED_CORPUS[4]]);
    expect(await contents(dataset, 'iphone')).toEqual([UNSPACED_CORPUS[4]]);
  };

  it('finds the words of scripts written without spaces, cut into pairs of characters', async () => {
    const { dataset } = await unspacedDataset();
    await expectUnspacedMatches(dataset);
    await expectReferenceScores(dataset, '東京の天気 检索引擎 ビール');
    await expectExactStatistics(dataset);
  });

  // As for migration 9 above.
  itOnOnePostgres('cuts, at migration 21, the terms an earlier version indexed whole', async () => {
    const { dataset, postings } = await unspacedDataset();
    const fresh = await postings();
    const [{ seq }] = (await t.sql.query(`SELECT seq FROM datasets WHERE id = $1`, [dataset])).rows;
    // The dataset indexed again as earlier versions did: a run of such text one term.
    await indexAsWritten(seq);
    expect(await contents(dataset, '检索')).toEqual([]);

    await t.sql.query(`DELETE FROM schema_migrations WHERE name = 'UnspacedScriptTerms1732000000021'`);
    expect(await t.cli('migrate')).toEqual({ applied: ['UnspacedScriptTerms1732000000021'] });

    // What indexing writes now, term for term.
    expect(await postings()).toEqual(fresh);
    await expectExactStatistics(dataset);
    await expectUnspacedMatches(dataset);
  });

  it('returns the contract fields and the source, a 0..1 score and a server-side query time', async () => {
    const response = await query({ query: 'powerhouse of the cell' }).expect(200);
    expect(response.body.query_time_ms).toEqual(expect.any(Number));
    const [first] = response.body.results as Result[];
    expect(Object.keys(first)).toEqual([
      'chunk_id',
      'content',
      'score',
      'metadata',
      'document_id',
      'filename',
      'title',
      'chunk_index',
      'char_start',
      'char_end',
      'page',
    ]);
    // Text sent as JSON, without a title: no file name, no title, one chunk of the whole text.
    expect(first).toMatchObject({
      content: CORPUS[0],
      metadata: { n: 0 },
      filename: null,
      title: null,
      chunk_index: 0,
      char_start: 0,
      char_end: CORPUS[0].length,
      page: null,
    });
    expect(first.score).toBeGreaterThan(0);
    expect(first.score).toBeLessThanOrEqual(1);
    expect(first.chunk_id).toMatch(/^chk_/);
  });

  it('honours limit and defaults it to 5', async () => {
    expect((await query({ query: 'cell energy cells' }).expect(200)).body.results).toHaveLength(5);
    expect((await query({ query: 'cell energy cells', limit: 2 }).expect(200)).body.results).toHaveLength(2);
  });

  it('searches a public dataset without credentials, and hides a private one', async () => {
    const batch = () => t.http.post('/v1/mcp/batch-query').send({ dataset_id: datasetId, queries: ['cell'] });
    await query({ query: 'cell' }, null).expect(404);
    await batch().expect(404);
    await t.http.patch(`/v1/datasets/${datasetId}`).set(bearer(key)).send({ is_public: true }).expect(200);
    try {
      expect((await query({ query: 'cell' }, null).expect(200)).body.results.length).toBeGreaterThan(0);
      expect((await batch().expect(200)).body.results[0].results.length).toBeGreaterThan(0);
    } finally {
      await t.http.patch(`/v1/datasets/${datasetId}`).set(bearer(key)).send({ is_public: false }).expect(200);
    }
  });

  it('uses the dataset’s language: `simple` neither stems nor drops stop words', async () => {
    const plain = await createDataset(t.http, key, { language: 'simple' });
    await ingest(t, key, plain, [{ content: 'The runners were running.' }]);
    const search = (q: string) =>
      t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: plain, query: q, mode: 'keyword' })
        .expect(200);
    expect((await search('run')).body.results).toHaveLength(0);
    expect((await search('running')).body.results).toHaveLength(1);
    expect((await search('the')).body.results).toHaveLength(1);
    const stemmed = (
      await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, query: 'produce', mode: 'keyword' })
        .expect(200)
    ).body.results as Result[];
    expect(stemmed.map((r) => r.content)).toContain(CORPUS[0]);
    expect(
      (
        await t.http
          .post('/v1/datasets')
          .set(bearer(key))
          .send({ name: 'k', language: 'klingon' })
          .expect(400)
      ).body.details.field,
    ).toBe('language');
  });

  it('never returns chunks of a deleted document', async () => {
    const own = await createDataset(t.http, key);
    const [gone, kept] = await ingest(t, key, own, [
      { content: 'zebra stripes everywhere' },
      { content: 'zebra crossing' },
    ]);
    await t.http.delete(`/v1/datasets/${own}/documents/${gone}`).set(bearer(key)).expect(204);
    const response = await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: own, query: 'zebra stripes' })
      .expect(200);
    expect((response.body.results as Result[]).map((r) => r.document_id)).toEqual([kept]);
  });

  it.each([
    ['a 1,001-character query', { query: 'x'.repeat(1001) }, 'query_too_long'],
    ['an empty query', { query: '' }, 'validation_error'],
    ['limit 51', { query: 'cell', limit: 51 }, 'validation_error'],
    ['limit 0', { query: 'cell', limit: 0 }, 'validation_error'],
    ['an unknown mode', { query: 'cell', mode: 'fuzzy' }, 'validation_error'],
    ['rerank without a reranker', { query: 'cell', rerank: true }, 'rerank_unavailable'],
    ['semantic mode without embeddings', { query: 'cell', mode: 'semantic' }, 'semantic_unavailable'],
    ['an unknown field', { query: 'cell', extra: 1 }, 'validation_error'],
    ['a query with U+0000', { query: 'cell\u0000' }, 'validation_error'],
    ['a whitespace-only query', { query: ' \t\n ' }, 'validation_error'],
    ['a query of invisible characters alone', { query: '\u200b\ufeff\u2060' }, 'validation_error'],
    ['a query of Hangul fillers alone', { query: '\u3164\u115f' }, 'validation_error'],
    ['limit as a string', { query: 'cell', limit: '5' }, 'validation_error'],
    ['limit as a boolean', { query: 'cell', limit: true }, 'validation_error'],
    ['an unknown field named constructor', { query: 'cell', constructor: 1 }, 'validation_error'],
    ['an unknown field named toString', { query: 'cell', toString: 'x' }, 'validation_error'],
  ])('answers 400 for %s with %s', async (_case, body, code) => {
    expect((await query(body).expect(400)).body.code).toBe(code);
  });

  it('answers 404 dataset_not_found for a missing dataset', async () => {
    const response = await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: 'ds_0000000000000000000000', query: 'cell' })
      .expect(404);
    expect(response.body.code).toBe('dataset_not_found');
  });

  describe('the source of each result', () => {
    let own: string;
    const ids = { text: '', file: '', titled: '', pdf: '' };
    // Enough paragraphs for several overlapping chunks, with characters of two UTF-16 code units in
    // each, and one paragraph alone naming Orinoco, far into the text.
    const paragraphs = Array.from(
      { length: 80 },
      (_, i) =>
        `Paragraph ${i} of the field notes: kestrels 🦅 hover over the meadows, watching for voles and ` +
        'beetles in the grass below before they stoop, then rise again into the wind above the hedges.',
    );
    paragraphs[70] = 'The kestrel named Orinoco nested in the church tower for three summers.';
    const text = paragraphs.join('\n\n');
    const search = (body: object) =>
      t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: own, ...body })
        .expect(200)
        .then((response) => response.body.results as Result[]);
    const upload = async (name: string, content: Buffer, metadata: object) => {
      const response = await t.http
        .post(`/v1/datasets/${own}/documents`)
        .set(bearer(key))
        .field('metadata', JSON.stringify(metadata))
        .attach('file', content, name)
        .expect(201);
      return response.body.document_id as string;
    };

    beforeAll(async () => {
      own = await createDataset(t.http, key);
      [ids.text] = await ingest(t, key, own, [{ content: text, metadata: { source: 'text' } }]);
      ids.file = await upload('merlin-notes.md', Buffer.from('The merlin hunts small birds over moorland.'), {
        source: 'file',
      });
      ids.titled = await upload('hobby.md', Buffer.from('The hobby catches dragonflies in flight.'), {
        source: 'file',
        title: 'Hobby falcons',
      });
      ids.pdf = await upload(
        'pdflatex-4-pages.pdf',
        await readFile('../shared/fixtures/pdf/pdflatex-4-pages.pdf'),
        { source: 'pdf' },
      );
      for (const id of [ids.file, ids.titled, ids.pdf]) await waitForDocument(t.http, key, own, id);
    }, 120_000);

    it("places a chunk in the document's text: its index and the offsets its content lies at", async () => {
      const [found] = await search({ query: 'Orinoco', limit: 1 });
      expect(found).toMatchObject({ document_id: ids.text, filename: null, title: null, page: null });
      expect(found.content).toContain('Orinoco');
      expect(found.chunk_index).toBeGreaterThan(0);
      expect(text.slice(found.char_start, found.char_end)).toBe(found.content);

      const all = await search({ query: 'kestrels meadows', limit: 50, filters: { source: 'text' } });
      expect(all.length).toBeGreaterThan(3);
      const inOrder = [...all].sort((a, b) => a.chunk_index - b.chunk_index);
      expect(inOrder.map((r) => r.chunk_index)).toEqual(inOrder.map((_, i) => i));
      for (const [i, result] of inOrder.entries()) {
        expect(text.slice(result.char_start, result.char_end)).toBe(result.content);
        if (i > 0) expect(result.char_start).toBeGreaterThan(inOrder[i - 1].char_start);
      }
      expect(inOrder.at(-1)!.char_end).toBe(text.length);
    });

    it("titles a file by its name, and by its metadata's title when it has one", async () => {
      const [merlin] = await search({ query: 'merlin moorland', limit: 1 });
      expect(merlin).toMatchObject({
        document_id: ids.file,
        filename: 'merlin-notes.md',
        title: 'merlin-notes.md',
        chunk_index: 0,
        char_start: 0,
        char_end: 'The merlin hunts small birds over moorland.'.length,
        page: null,
      });
      const [hobby] = await search({ query: 'dragonflies', limit: 1 });
      expect(hobby).toMatchObject({ document_id: ids.titled, filename: 'hobby.md', title: 'Hobby falcons' });
    });

    it("cites a PDF's pages: each chunk on the page it was read from, its offsets in the pages' text", async () => {
      // The fixture's four pages of blind text (../shared/fixtures/manifest.json) each end with their number.
      const results = await search({
        query: 'text information meaning language',
        limit: 50,
        filters: { source: 'pdf' },
      });
      const { body } = await t.http.get(`/v1/datasets/${own}/documents/${ids.pdf}`).set(bearer(key));
      expect(results).toHaveLength(body.chunks_created);
      const chunks = results.sort((a, b) => a.chunk_index - b.chunk_index);
      expect(new Set(chunks.map((r) => r.page))).toEqual(new Set([1, 2, 3, 4]));
      for (const [i, chunk] of chunks.entries()) {
        expect(chunk).toMatchObject({ filename: 'pdflatex-4-pages.pdf', title: 'pdflatex-4-pages.pdf' });
        expect(chunk.char_end - chunk.char_start).toBe(chunk.content.length);
        const next = chunks[i + 1];
        if (!next) {
          expect(chunk.content.trimEnd().endsWith('4')).toBe(true);
        } else if (next.page === chunk.page) {
          // Chunks of one page follow each other, and agree on the text they share where they overlap.
          expect(next.char_start).toBeGreaterThan(chunk.char_start);
          const shared = chunk.content.slice(next.char_start - chunk.char_start);
          expect(next.content.startsWith(shared)).toBe(true);
        } else {
          // The last chunk of a page ends with its number; the next page starts after a blank line.
          expect(next.page).toBe(chunk.page! + 1);
          expect(chunk.content.trimEnd().endsWith(String(chunk.page))).toBe(true);
          expect(next.char_start).toBeGreaterThanOrEqual(chunk.char_end + 2);
        }
      }
    });
  });

  describe('batch', () => {
    it('answers each query in order with chunk_id, content, score and the source, without metadata', async () => {
      const queries = ['mitosis', 'stock markets', 'ribosomes'];
      const response = await t.http
        .post('/v1/mcp/batch-query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, queries, limit: 1 })
        .expect(200);
      expect(response.body.query_time_ms).toEqual(expect.any(Number));
      // The same documents as the single query finds.
      const documentIds: string[] = [];
      for (const q of queries) {
        documentIds.push(
          ((await query({ query: q, limit: 1 }).expect(200)).body.results as Result[])[0].document_id,
        );
      }
      const found = (content: string, document_id: string) => ({
        chunk_id: expect.any(String),
        content,
        score: expect.any(Number),
        document_id,
        filename: null,
        title: null,
        chunk_index: 0,
        char_start: 0,
        char_end: content.length,
        page: null,
      });
      expect(response.body.results).toEqual([
        { query: 'mitosis', results: [found(CORPUS[1], documentIds[0])] },
        { query: 'stock markets', results: [found(CORPUS[7], documentIds[1])] },
        { query: 'ribosomes', results: [found(CORPUS[5], documentIds[2])] },
      ]);
    });

    it('keeps the source beside the explain fields, and still no metadata', async () => {
      const response = await t.http
        .post('/v1/mcp/batch-query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, queries: ['mitosis'], limit: 1, explain: true })
        .expect(200);
      const [result] = response.body.results[0].results as Result[];
      expect(result).toMatchObject({ content: CORPUS[1], document_id: expect.stringMatching(/^doc_/) });
      expect(result).toMatchObject({ chunk_index: 0, keyword_rank: 1, score_basis: 'keyword' });
      expect(result).not.toHaveProperty('metadata');
    });

    it('applies filters to every query', async () => {
      const response = await t.http
        .post('/v1/mcp/batch-query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, queries: ['energy', 'cell'], filters: { n: { $gte: 4 } } })
        .expect(200);
      for (const item of response.body.results as { results: Result[] }[]) {
        for (const result of item.results) expect(CORPUS.indexOf(result.content)).toBeGreaterThanOrEqual(4);
      }
    });

    it.each([
      ['11 queries', { queries: Array(11).fill('cell') }, 'too_many_queries'],
      ['no queries', { queries: [] }, 'validation_error'],
      ['an empty query', { queries: ['ok', ''] }, 'validation_error'],
      ['a whitespace-only query', { queries: ['ok', '  '] }, 'validation_error'],
      ['an invisible query', { queries: ['ok', '\u200b'] }, 'validation_error'],
      ['a 1,001-character query', { queries: ['ok', 'y'.repeat(1001)] }, 'query_too_long'],
      ['queries that is not a list', { queries: 'cell' }, 'validation_error'],
    ])('answers 400 for %s with %s', async (_case, body, code) => {
      const response = await t.http
        .post('/v1/mcp/batch-query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, ...body });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe(code);
    });
  });
});

/** The number in a result of the corpora below ("Guide number 7 …", "Point number 7 …"). */
function numberIn(result: Result): number {
  return Number(/number (\d+)/.exec(result.content)![1]);
}

describe('Filters', () => {
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;

  beforeAll(async () => {
    t = await startTestApp({ EMBEDDING_PROVIDER: 'none' });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    const docs = Array.from({ length: 60 }, (_, i) => ({
      content: `Guide number ${i} about installing the product.`,
      metadata: {
        // The rare ones rank last (equal scores go to the earlier chunk): the filter must look past
        // the first rounds of candidates to find them.
        category: i >= 54 ? 'rare' : 'common',
        tags: i % 2 === 0 ? ['even', 'setup'] : ['odd'],
        year: 2000 + i,
        editions: [i, i + 100],
        ...(i % 10 === 0 ? { reviewed: true } : {}),
        // Keys that class-transformer would leave out of a copied object.
        ...(i === 0 ? { toString: 'yes', valueOf: 'v' } : {}),
        // Nested metadata, reached by dotted names; and one top-level key whose name holds a dot.
        author: {
          name: i < 3 ? 'Ada' : 'Grace',
          born: 1900 + i,
          ...(i === 7 ? { langs: ['en', 'fr'] } : {}),
        },
        ...(i === 8 ? { 'release.channel': 'beta' } : i === 9 ? { release: { channel: 'beta' } } : {}),
      },
    }));
    await ingest(t, key, datasetId, docs);
  });
  afterAll(() => t.close());

  const search = (filters: unknown, limit = 50) =>
    t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, query: 'installing guide product', limit, filters });
  const numbers = (results: Result[]) => results.map(numberIn).sort((a, b) => a - b);

  it.each([
    ['equality', { category: 'rare' }, [54, 55, 56, 57, 58, 59]],
    ['array contains', { tags: 'odd', year: { $lt: 2008 } }, [1, 3, 5, 7]],
    ['$in', { year: { $in: [2003, 2004, 2100] } }, [3, 4]],
    ['$nin with $lte', { year: { $nin: [2001], $lte: 2002 } }, [0, 2]],
    ['$in on an array field', { tags: { $in: ['odd', 'none'] }, year: { $lt: 2008 } }, [1, 3, 5, 7]],
    ['$nin on an array field', { tags: { $nin: ['odd', 'none'] }, year: { $lt: 2008 } }, [0, 2, 4, 6]],
    [
      '$nin on a field most lack',
      { reviewed: { $nin: [true] }, year: { $lt: 2012 } },
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 11],
    ],
    ['$in with a value no document holds', { year: { $in: [2003, 2004.5] } }, [3]],
    ['two $in lists', { year: { $in: [2003, 2004, 2010] }, tags: { $in: ['even', 'x'] } }, [4, 10]],
    ['a dotted key with $in either way', { 'release.channel': { $in: ['beta', 'none'] } }, [8, 9]],
    ['a nested array with $in', { 'author.langs': { $in: ['fr', 'de'] } }, [7]],
    ['$ne', { category: { $ne: 'common' } }, [54, 55, 56, 57, 58, 59]],
    ['$exists', { reviewed: { $exists: true } }, [0, 10, 20, 30, 40, 50]],
    ['$or', { $or: [{ year: 2010 }, { year: { $gt: 2057 } }] }, [10, 58, 59]],
    ['$and', { $and: [{ tags: 'setup' }, { year: { $gte: 2050 } }] }, [50, 52, 54, 56, 58]],
    ['a number in an array', { editions: { $gte: 158 } }, [58, 59]],
    ['a number in an array, either element', { editions: { $lt: 2 } }, [0, 1]],
    ['a string in an array', { tags: { $gt: 'p' }, year: { $lt: 2006 } }, [0, 2, 4]],
    ['a nested field', { 'author.name': 'Ada' }, [0, 1, 2]],
    ['a nested field with $in', { 'author.born': { $in: [1905, 1906] } }, [5, 6]],
    ['a nested field compared', { 'author.born': { $gte: 1957 } }, [57, 58, 59]],
    ['a nested array', { 'author.langs': 'fr' }, [7]],
    ['a nested field that exists', { 'author.langs': { $exists: true } }, [7]],
    ['a nested field with $ne', { 'author.name': { $ne: 'Grace' }, year: { $lt: 2010 } }, [0, 1, 2]],
    ['a dotted key, top-level or nested', { 'release.channel': 'beta' }, [8, 9]],
    ['a dotted key that exists either way', { 'release.channel': { $exists: true } }, [8, 9]],
    ['a dotted key compared either way', { 'release.channel': { $gte: 'b' } }, [8, 9]],
    // Negations: a document without the field passes, at either path.
    [
      'a nested field with $ne, absent',
      { 'author.langs': { $ne: 'fr' }, year: { $lt: 2010 } },
      [0, 1, 2, 3, 4, 5, 6, 8, 9],
    ],
    ['a nested field with $nin', { 'author.name': { $nin: ['Grace'] } }, [0, 1, 2]],
    [
      'a nested field that does not exist',
      { 'author.langs': { $exists: false }, year: { $gt: 2056 } },
      [57, 58, 59],
    ],
    [
      'a dotted key that exists neither way',
      { 'release.channel': { $exists: false }, year: { $lt: 2010 } },
      [0, 1, 2, 3, 4, 5, 6, 7],
    ],
    // A step is a key, never an array's index: `editions.0` names nothing in [i, i + 100].
    [
      'a numeric step, which is no index',
      { $or: [{ 'editions.0': { $exists: true } }, { 'editions.0': { $gte: 0 } }, { 'tags.0': 'even' }] },
      [],
    ],
  ])('filters by %s', async (_case, filters, expected) => {
    const response = await search(filters).expect(200);
    expect(numbers(response.body.results as Result[])).toEqual(expected);
  });

  it('still returns `limit` results under a selective filter that only the last candidates pass', async () => {
    const response = await search({ category: 'rare' }, 5).expect(200);
    // Five of the six, by their chunks' order, which concurrent indexing need not give by number.
    const found = numbers(response.body.results as Result[]);
    expect(new Set(found).size).toBe(5);
    expect(found.every((n) => n >= 54 && n <= 59)).toBe(true);
  });

  it.each([
    [{ year: { $regex: '.*' } }, 'year'],
    [{ year: { $gt: [1] } }, 'year'],
    [{ tags: { $in: 'odd' } }, 'tags'],
    [{ $or: {} }, '$or'],
    [{ $where: 'true' }, '$where'],
    [{ category: { nested: 1 } }, 'category'],
    [{ year: { $in: Array.from({ length: 101 }, (_, i) => i) } }, 'year'],
    [{ category: null }, 'category'],
    [{ category: { $ne: null } }, 'category'],
    [{ category: '\ud800' }, 'category'],
    [{ category: { $in: ['common', '\udfff'] } }, 'category'],
    [{ year: { $gt: 'x\u0000' } }, 'year'],
    [{ '\ud800': 'x' }, 'filters'],
    [{ '': 'x' }, 'filters'],
    [{ ['k'.repeat(257)]: 'x' }, 'filters'],
    [{ [`a.${'k'.repeat(257)}`]: 'x' }, 'filters'],
  ])('answers 400 invalid_filter naming the field for %j', async (filters, field) => {
    const response = await search(filters).expect(400);
    expect(response.body).toMatchObject({ code: 'invalid_filter', details: { field } });
  });

  it('takes a dotted name longer than a key can be when each of its parts is a key', async () => {
    const name = `${'k'.repeat(200)}.${'k'.repeat(200)}`;
    expect((await search({ [name]: 'x' }).expect(200)).body.results).toEqual([]);
  });

  it('answers 400 invalid_filter pointing to dotted names for a nested object given as a filter', async () => {
    const response = await search({ author: { name: 'Ada' } }).expect(400);
    expect(response.body).toMatchObject({
      code: 'invalid_filter',
      details: { field: 'author', issue: expect.stringContaining('"author.name"') },
    });
    const withoutDollar = await search({ year: { gte: 2000 } }).expect(400);
    expect(withoutDollar.body.details.issue).toContain('did you mean "$gte"?');
  });

  it('answers 400 invalid_filter for a number beyond double precision, which JSON.parse makes Infinity', async () => {
    const response = await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .set('Content-Type', 'application/json')
      .send(`{"dataset_id": "${datasetId}", "query": "guide", "filters": {"year": {"$lt": 1e400}}}`)
      .expect(400);
    expect(response.body).toMatchObject({ code: 'invalid_filter', details: { field: 'year' } });
  });

  it('filters on fields named like members of Object.prototype', async () => {
    expect(numbers((await search({ valueOf: 'v' }).expect(200)).body.results as Result[])).toEqual([0]);
    expect(numbers((await search({ valueOf: 'w' }).expect(200)).body.results as Result[])).toEqual([]);
    const exists = await search({ toString: { $exists: true } }).expect(200);
    expect(numbers(exists.body.results as Result[])).toEqual([0]);
    const either = await search({ $or: [{ hasOwnProperty: 'x' }, { category: 'rare' }] }).expect(200);
    expect(numbers(either.body.results as Result[])).toEqual([54, 55, 56, 57, 58, 59]);
  });

  it.each([
    ['{"constructor": "c"}', 'filters.constructor'],
    ['{"$or": [{"__proto__": "x"}, {"category": "rare"}]}', 'filters.$or[0].__proto__'],
    ['{"prototype": 1}', 'filters.prototype'],
  ])(
    'answers 400 invalid_filter for the reserved field name in %s, rather than drop the condition',
    async (filters, field) => {
      const response = await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .set('Content-Type', 'application/json')
        .send(`{"dataset_id": "${datasetId}", "query": "guide", "filters": ${filters}}`)
        .expect(400);
      expect(response.body).toMatchObject({ code: 'invalid_filter', details: { field } });
    },
  );

  it('compares numbers only with numbers: a number filter on a text field matches nothing, without error', async () => {
    const response = await search({ category: { $gt: 5 } }).expect(200);
    expect(response.body.results).toEqual([]);
  });

  it('answers 400 too_many_filters beyond 10 fields', async () => {
    const filters = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`f${i}`, i]));
    expect((await search(filters).expect(400)).body.code).toBe('too_many_filters');
  });

  it('counts the fields inside $and and $or towards the 10', async () => {
    const fields = (from: number, count: number) =>
      Array.from({ length: count }, (_, i) => ({ [`f${from + i}`]: i }));
    await search({ $or: fields(0, 5), $and: fields(5, 5) }).expect(200);
    const response = await search({ $or: fields(0, 5), $and: [...fields(5, 5), { $or: fields(10, 1) }] });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'too_many_filters', details: { count: 11, limit: 10 } });
  });

  /** `{"year": 2010}` inside `depth` levels of alternating $and / $or, as JSON text (too deep for superagent). */
  const nested = (depth: number) => {
    let filter = '{"year": 2010}';
    for (let i = 0; i < depth; i++) filter = `{"${i % 2 ? '$or' : '$and'}": [${filter}]}`;
    return t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .set('Content-Type', 'application/json')
      .send(`{"dataset_id": "${datasetId}", "query": "installing guide product", "filters": ${filter}}`);
  };

  it('takes $and / $or nested 10 deep', async () => {
    const response = await nested(10).expect(200);
    expect(numbers(response.body.results as Result[])).toEqual([10]);
  });

  it('answers 400 invalid_filter for $and / $or nested 11 deep', async () => {
    const response = await nested(11).expect(400);
    expect(response.body).toMatchObject({ code: 'invalid_filter', details: { field: '$and' } });
  });

  it('answers 400, not 500, for a filter nested thousands deep (refused as a body before any parsing of filters)', async () => {
    const response = await nested(5000).expect(400);
    expect(response.body).toMatchObject({ code: 'validation_error', details: { field: 'body' } });
  });

  it('treats hostile field names and values as data, never as SQL', async () => {
    const response = await search({ "category' OR '1'='1": "x'); DROP TABLE chunks; --" }).expect(200);
    expect(response.body.results).toEqual([]);
    const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM chunks');
    expect(rows[0].n).toBe(60);
  });
});

describe.each([
  ['an exact scan', {}],
  // Over 150 chunks PostgreSQL would rather sort them all than walk the index, as it would not over a
  // large dataset: the planner is told to walk it.
  [
    'the HNSW index',
    { SEARCH_EXACT_SCAN_MAX_CHUNKS: '0', PGOPTIONS: '-c enable_seqscan=off -c enable_sort=off' },
  ],
])('Vector leg under filters, through %s', (path, env: Record<string, string>) => {
  // 150 chunks on an arc: chunk i is at angle i / 100 from the query, so the vector leg ranks them by
  // number. The filters' matches lie at every distance, or only at the far end, past every other
  // chunk; there, fewer match than the 50 candidates asked for, and the index's walk, having passed
  // every chunk, is completed by the exact scan.
  const throughIndex = path === 'the HNSW index';
  const COUNT = 150;
  const QUERY = 'where on the arc';
  let openai: FakeOpenAI;
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;
  let documentIds: string[];

  beforeAll(async () => {
    openai = await startFakeOpenAI(4);
    openai.vectors.set(QUERY, [1, 0, 0, 0]);
    const docs = Array.from({ length: COUNT }, (_, i) => {
      const content = `Point number ${i} on the arc.`;
      openai.vectors.set(content, [Math.cos(i / 100), Math.sin(i / 100), 0, 0]);
      return {
        content,
        metadata: {
          category: i >= COUNT - 6 ? 'rare' : 'common',
          tags: i % 2 ? ['odd'] : ['even'],
          year: 2000 + i,
        },
      };
    });
    t = await startTestApp({ ...openAiEnv(openai), ...env });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    documentIds = await ingest(t, key, datasetId, docs);
  });
  afterAll(async () => {
    await t.close();
    await openai.close();
  });

  const numbers = async (filters: object, limit: number) => {
    const response = await t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, query: QUERY, mode: 'semantic', limit, filters })
      .expect(200);
    return (response.body.results as Result[]).map(numberIn);
  };
  const range = (from: number, to: number, step = 1) =>
    Array.from({ length: Math.floor((to - from) / step) + 1 }, (_, i) => from + i * step);

  it('returns `limit` matches, nearest first, when matches lie at every distance', async () => {
    expect(await numbers({ tags: 'odd' }, 5)).toEqual([1, 3, 5, 7, 9]);
    expect(await numbers({ tags: 'even' }, 50)).toEqual(range(0, 98, 2));
  });

  it('finds matches that only lie beyond every other chunk', async () => {
    expect(await numbers({ category: 'rare' }, 5)).toEqual(range(COUNT - 6, COUNT - 2));
    expect(await numbers({ category: 'rare', year: { $gte: 2000 + COUNT - 2 } }, 5)).toEqual([
      COUNT - 2,
      COUNT - 1,
    ]);
  });

  it('combines an array field with a range', async () => {
    expect(await numbers({ tags: 'odd', year: { $lt: 2010 } }, 50)).toEqual([1, 3, 5, 7, 9]);
  });

  it('finds nothing, without walking, when no document passes', async () => {
    expect(await numbers({ category: 'none' }, 5)).toEqual([]);
  });

  // On Citus the walk runs in a transaction of its own, and the workers count the shards' index scans.
  (throughIndex ? itOnOnePostgres : it)(
    `searches ${throughIndex ? 'through' : 'without'} the HNSW index`,
    async () => {
      await numbers({ tags: 'odd' }, 5); // 75 matches: the walk alone finds the 50 candidates
      // Each connection's latest statement; the walk's orders by the indexed half-precision expression.
      const { rows } = await t.sql.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%::halfvec(4)) <=>%'`,
      );
      expect(rows[0].n > 0).toBe(throughIndex);
      // The server's connections report their index scans within about 10 s of their last statement.
      const indexScans = async () =>
        (
          await t.sql.query(
            `SELECT idx_scan::int AS n FROM pg_stat_user_indexes WHERE indexrelname = 'chunks_embedding_4_idx'`,
          )
        ).rows[0].n as number;
      if (throughIndex) {
        const deadline = Date.now() + 20_000;
        while ((await indexScans()) === 0 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
        expect(await indexScans()).toBeGreaterThan(0);
      }
    },
  );

  // Last: it deletes the nearest points.
  it('never returns chunks of a deleted document, with or without a filter', async () => {
    for (const id of documentIds.slice(0, 3)) {
      await t.http.delete(`/v1/datasets/${datasetId}/documents/${id}`).set(bearer(key)).expect(204);
    }
    expect(await numbers({}, 5)).toEqual([3, 4, 5, 6, 7]);
    expect(await numbers({ tags: 'even' }, 3)).toEqual([4, 6, 8]);
  });
});

describe('Keyword leg under a selective filter on a large match set', () => {
  it('finds the filtered chunks even when they rank far below the first ones checked', async () => {
    const t = await startTestApp({ EMBEDDING_PROVIDER: 'none', INGEST_CONCURRENCY: '8' });
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      const docs = Array.from({ length: 420 }, (_, i) => ({
        // The three filtered documents are the longest, so BM25 ranks them last.
        content:
          i < 3
            ? `Install the widget. ${'Unrelated padding words. '.repeat(40)}`
            : `Install the widget number ${i}.`,
        metadata: { kind: i < 3 ? 'rare' : 'common' },
      }));
      const ids: string[] = [];
      for (let i = 0; i < docs.length; i += 20) {
        const batch = await Promise.all(
          docs
            .slice(i, i + 20)
            .map((doc) =>
              t.http.post(`/v1/datasets/${datasetId}/documents`).set(bearer(key)).send(doc).expect(201),
            ),
        );
        ids.push(...batch.map((r) => r.body.document_id as string));
      }
      for (const id of ids) await waitForDocument(t.http, key, datasetId, id);
      const response = await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({
          dataset_id: datasetId,
          query: 'install widget',
          mode: 'keyword',
          limit: 5,
          explain: true,
          filters: { kind: 'rare' },
        })
        .expect(200);
      const results = response.body.results as Result[];
      expect(results).toHaveLength(3);
      expect(results.every((r) => r.metadata.kind === 'rare')).toBe(true);
      expect(results[0].keyword_rank).toBe(1);
    } finally {
      await t.close();
    }
  }, 120_000);
});

describe('Hybrid search with controlled vectors', () => {
  let openai: FakeOpenAI;
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;
  const QUERY = 'solar panel efficiency';
  const docs = {
    keywordOnly: 'Solar panel efficiency solar panel efficiency: a keyword-stuffed page.',
    relevant: 'Panel efficiency of solar cells improved with perovskite layers.',
    semanticOnly: 'Photovoltaic modules convert more sunlight each year.',
    filler1: 'Wind turbines spin in the North Sea.',
    // Holds one query word: the keyword leg's weakest candidate, whose share a chunk it did not rank takes.
    filler2: 'Hydroelectric dams store water for later, unlike solar farms on windy hills.',
  };

  beforeAll(async () => {
    openai = await startFakeOpenAI(4);
    const v = unitVector;
    openai.vectors.set(QUERY, v([1, 0, 0, 0]));
    openai.vectors.set(docs.semanticOnly, v([1, 0.05, 0, 0])); // semantic rank 1
    openai.vectors.set(docs.relevant, v([1, 0.3, 0, 0])); // semantic rank 2
    openai.vectors.set(docs.filler1, v([0.5, 1, 0, 0])); // rank 3
    openai.vectors.set(docs.filler2, v([0.3, 1, 0.2, 0])); // rank 4
    openai.vectors.set(docs.keywordOnly, v([0, 0, 1, 0])); // semantic rank 5
    t = await startTestApp(openAiEnv(openai));
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    await ingest(
      t,
      key,
      datasetId,
      Object.entries(docs).map(([name, content]) => ({ content, metadata: { name } })),
    );
  });
  afterAll(async () => {
    await t.close();
    await openai.close();
  });

  const search = (body: object) =>
    t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, query: QUERY, explain: true, limit: 5, ...body });

  it('answers a dataset with nothing indexed yet with no results in every mode', async () => {
    const empty = await createDataset(t.http, key);
    for (const mode of ['semantic', 'hybrid', 'keyword']) {
      const response = await search({ dataset_id: empty, mode }).expect(200);
      expect(response.body.results).toEqual([]);
    }
  });

  it('ranks first the chunk that each leg alone ranks second, close to its first', async () => {
    const keyword = (await search({ mode: 'keyword' }).expect(200)).body.results as Result[];
    const semantic = (await search({ mode: 'semantic' }).expect(200)).body.results as Result[];
    const hybrid = (await search({}).expect(200)).body.results as Result[];
    expect(keyword[0].content).toBe(docs.keywordOnly);
    expect(keyword[1].content).toBe(docs.relevant);
    expect(semantic[0].content).toBe(docs.semanticOnly);
    expect(semantic[1].content).toBe(docs.relevant);
    expect(hybrid[0]).toMatchObject({ content: docs.relevant, keyword_rank: 2, semantic_rank: 2 });
    // Each leg's score over its best, at equal weights.
    expect(hybrid[0].fusion_score).toBeCloseTo(
      0.5 * (hybrid[0].keyword_score! / keyword[0].keyword_score!) +
        0.5 * (hybrid[0].semantic_score! / semantic[0].semantic_score!),
      5,
    );
  });

  it('shows each result with its document, whichever leg ranked it and however deep', async () => {
    // `relevant` is second in both legs: below the one result shown by either leg alone, first fused.
    const [top] = (await search({ limit: 1 }).expect(200)).body.results as Result[];
    expect(top).toMatchObject({
      content: docs.relevant,
      metadata: { name: 'relevant' },
      chunk_index: 0,
      char_end: docs.relevant.length,
    });
    for (const [mode, found] of [
      ['hybrid', 5],
      ['semantic', 5],
      ['keyword', 3],
    ] as const) {
      const results = (await search({ mode }).expect(200)).body.results as Result[];
      expect(results).toHaveLength(found);
      for (const r of results) {
        const name = Object.entries(docs).find(([, content]) => content === r.content)![0];
        expect(r.metadata).toEqual({ name });
        expect(r.document_id).toMatch(/^doc_/);
        // The source, whichever statement read the row: the leg's, or the one after the fusion.
        expect(r).toMatchObject({ filename: null, title: null, chunk_index: 0, char_start: 0, page: null });
        expect(r.char_end).toBe(r.content.length);
      }
    }
  });

  it('embeds a batch’s distinct queries in one request and ranks each by its own vector', async () => {
    openai.vectors.set('wind', openai.vectors.get(docs.filler1)!);
    const before = openai.requests.length;
    const response = await t.http
      .post('/v1/mcp/batch-query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, queries: [QUERY, 'wind', QUERY], mode: 'semantic', limit: 1 })
      .expect(200);
    expect(openai.requests.slice(before)).toEqual([[QUERY, 'wind']]);
    expect(
      (response.body.results as { query: string; results: Result[] }[]).map((item) => [
        item.query,
        item.results[0].content,
      ]),
    ).toEqual([
      [QUERY, docs.semanticOnly],
      ['wind', docs.filler1],
      [QUERY, docs.semanticOnly],
    ]);
  });

  it('answers 503 embedding_unavailable for a batch whose embeddings request fails', async () => {
    const broken = 'a batch query the embedding service fails on';
    openai.failing.add(broken);
    try {
      const response = await t.http
        .post('/v1/mcp/batch-query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, queries: [QUERY, broken] })
        .expect(503);
      expect(response.body.code).toBe('embedding_unavailable');
    } finally {
      openai.failing.delete(broken);
    }
  });

  it("scores 1.0 a chunk whose vector is the query's, ranked first by both legs", async () => {
    openai.vectors.set('perovskite', openai.vectors.get(docs.relevant)!);
    const response = await search({ query: 'perovskite' }).expect(200);
    expect(response.body.results[0]).toMatchObject({
      content: docs.relevant,
      score: 1,
      score_basis: 'semantic',
      fusion_score: 1,
      keyword_rank: 1,
      semantic_rank: 1,
    });
  });

  it('answers 503 embedding_unavailable when the query cannot be embedded, and 404 for a missing dataset', async () => {
    const broken = 'a query the embedding service fails on';
    openai.failing.add(broken);
    try {
      const failed = await search({ query: broken }).expect(503);
      expect(failed.body.code).toBe('embedding_unavailable');
      // The dataset is looked up before anything is embedded.
      const missing = await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: 'ds_0000000000000000000000', query: broken })
        .expect(404);
      expect(missing.body.code).toBe('dataset_not_found');
      // Keyword mode needs no embedding, and the server is still well.
      expect((await search({ query: broken, mode: 'keyword' }).expect(200)).body.results).toBeDefined();
    } finally {
      openai.failing.delete(broken);
    }
  }, 60_000);

  it('reports cosine similarities in explain and keeps scores within 0..1', async () => {
    const results = (await search({}).expect(200)).body.results as Result[];
    const semanticOnly = results.find((r) => r.content === docs.semanticOnly)!;
    expect(semanticOnly.semantic_score).toBeCloseTo(1 / Math.hypot(1, 0.05), 5);
    for (const r of results) {
      expect(r.score).toBeGreaterThan(0);
      expect(r.score).toBeLessThanOrEqual(1);
    }
  });
});

describe.each([
  ['/v1/mcp/query', { query: 'cell energy' }],
  ['/v1/mcp/batch-query', { queries: ['cell energy', 'energy'] }],
])('Timeout of %s', (path, body) => {
  const TIMEOUT_MS = 1500;
  let openai: FakeOpenAI;
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;

  beforeAll(async () => {
    openai = await startFakeOpenAI(4);
    t = await startTestApp({ ...openAiEnv(openai), SEARCH_TIMEOUT_MS: String(TIMEOUT_MS) });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    await ingest(
      t,
      key,
      datasetId,
      CORPUS.map((content) => ({ content })),
    );
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await openai.close();
  });

  /**
   * The dataset's chunks held locked where the vector statement reads them (on Citus, the shard on
   * its worker, so that the cancel must reach the worker's task), and a count of the vector
   * statements running there.
   */
  const holdChunks = async () => {
    const {
      rows: [{ seq }],
    } = await t.sql.query<{ seq: string }>('SELECT seq::text FROM datasets WHERE id = $1', [datasetId]);
    const placement = await placementOf(t.sql, t.database.url, 'chunks', seq);
    // Two connections: a transaction sees pg_stat_activity as it was when it first read it.
    const [holder, watcher] = [placement.url, placement.url].map(
      (connectionString) => new pg.Client({ connectionString }),
    );
    const release = () => Promise.all([holder.end(), watcher.end()]);
    try {
      await Promise.all([holder.connect(), watcher.connect()]);
      if (ON_CITUS) await holder.query('SET citus.enable_manual_changes_to_shards = on');
      await holder.query(`BEGIN; LOCK TABLE ${placement.table} IN ACCESS EXCLUSIVE MODE`);
    } catch (error) {
      await release().catch(() => undefined);
      throw error;
    }
    const vectorStatements = async () =>
      (
        await watcher.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND pid <> pg_backend_pid()
              AND state = 'active' AND query LIKE '%<=>%'`,
        )
      ).rows[0].n;
    return { vectorStatements, release };
  };

  it('answers 504 query_timeout at the deadline and cancels the statement still running', async () => {
    // The query's embedding takes a second, then its vector statement waits for a lock: its own
    // statement timeout would end it about a second after the request's deadline.
    openai.delayMs = 1000;
    const held = await holdChunks();
    try {
      const started = performance.now();
      const answer = t.http
        .post(path)
        .set(bearer(key))
        .send({ dataset_id: datasetId, mode: 'semantic', ...body })
        .then((response) => response);
      await until(async () => (await held.vectorStatements()) > 0);
      const response = await answer;
      expect(response.status).toBe(504);
      expect(response.body).toMatchObject({ code: 'query_timeout', details: { timeout_ms: TIMEOUT_MS } });
      await until(async () => (await held.vectorStatements()) === 0);
      expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + 600);
    } finally {
      openai.delayMs = 0;
      await held.release();
    }
  });

  it('searches normally again once the lock is gone', async () => {
    const response = await t.http
      .post(path)
      .set(bearer(key))
      .send({ dataset_id: datasetId, mode: 'semantic', ...body })
      .expect(200);
    expect(response.body.results.length).toBeGreaterThan(0);
  });
});

describe('Reranking through a Cohere-compatible API', () => {
  type Answer = (documents: string[]) => unknown[];
  // Prefers the shortest passage: the opposite of what BM25 does here.
  const preferShort: Answer = (documents) =>
    documents.map((d, index) => ({ index, relevance_score: 1 / (1 + d.length / 10) }));
  let answer = preferShort;
  /** The `model` of the last request the API was sent. */
  let modelAsked: unknown;
  /** While set, the API holds its answers, and says when the service gave one up. */
  let holding: { gaveUp(): void } | null = null;
  let server: Server;
  let t: TestApp;
  let key: CreatedKey;
  let datasetId: string;

  beforeAll(async () => {
    server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        const { documents, model } = JSON.parse(body) as { documents: string[]; model: unknown };
        modelAsked = model;
        if (holding) {
          const held = holding;
          response.on('close', () => held.gaveUp());
          return;
        }
        response
          .writeHead(200, { 'Content-Type': 'application/json' })
          .end(JSON.stringify({ results: answer(documents) }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t = await startTestApp({
      EMBEDDING_PROVIDER: 'none',
      RERANK_PROVIDER: 'http',
      RERANK_MODEL: 'rerank-english-v3.0',
      RERANK_BASE_URL: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
      // Below the rerank request's own 5 s limit, so that the deadline is what ends a held request.
      SEARCH_TIMEOUT_MS: '2500',
    });
    key = await t.createApiKey();
    datasetId = await createDataset(t.http, key);
    await ingest(t, key, datasetId, [
      { content: 'cell cell cell energy in a long sentence about cells' },
      { content: 'cell' },
    ]);
  });
  afterEach(() => {
    answer = preferShort;
    holding = null;
  });
  afterAll(async () => {
    await t.close();
    server.close();
  });

  const rerank = () =>
    t.http
      .post('/v1/mcp/query')
      .set(bearer(key))
      .send({ dataset_id: datasetId, query: 'cell', rerank: true, explain: true });

  it('reranks: its order and probabilities decide', async () => {
    const results = (await rerank().expect(200)).body.results as Result[];
    expect(results.map((r) => r.content)).toEqual([
      'cell',
      'cell cell cell energy in a long sentence about cells',
    ]);
    expect(results[0].score).toBeCloseTo(1 / 1.4, 5);
    expect(results[0].rerank_score).toBe(results[0].score);
    expect(modelAsked).toBe('rerank-english-v3.0');
  });

  it.each<[string, Answer]>([
    ['a relevance above 1', (documents) => documents.map((_, index) => ({ index, relevance_score: 7.5 }))],
    ['a negative relevance', (documents) => documents.map((_, index) => ({ index, relevance_score: -1.5 }))],
    ['no relevance', (documents) => documents.map((_, index) => ({ index }))],
    ['a passage left out', (documents) => preferShort(documents).slice(1)],
    ['a passage scored twice', (documents) => documents.map(() => ({ index: 0, relevance_score: 0.5 }))],
    [
      'an unknown passage',
      (documents) => documents.map((_, index) => ({ index: index + 1, relevance_score: 0.5 })),
    ],
  ])('answers 502 rerank_failed, not scores outside 0..1, for an answer with %s', async (_case, bad) => {
    answer = bad;
    const response = await rerank().expect(502);
    expect(response.body.code).toBe('rerank_failed');
  });

  it('gives the rerank request up at the deadline, answering 504 query_timeout', async () => {
    let gaveUpAt = Infinity;
    holding = { gaveUp: () => (gaveUpAt = performance.now()) };
    const response = await rerank().expect(504);
    const answeredAt = performance.now();
    expect(response.body.code).toBe('query_timeout');
    await until(() => gaveUpAt < Infinity, 1_000); // the request's own limit would be 2.5 s later
    expect(gaveUpAt - answeredAt).toBeLessThan(1_000);
  });
});

describe('Reranking in process', () => {
  /** Keyword search reranked by the synthetic cross-encoder. */
  const LOCAL_RERANKER = {
    EMBEDDING_PROVIDER: 'none',
    RERANK_PROVIDER: 'local',
    RERANK_MODEL: 'synthetic/ce-L6-H384',
  };

  it('refuses to start when the configured reranker cannot be loaded', async () => {
    const { code, output } = await runUntilExit({
      EMBEDDING_PROVIDER: 'none',
      RERANK_PROVIDER: 'local',
      RERANK_MODEL: 'synthetic/no-such-cross-encoder',
    });
    expect(code).toBe(1);
    expect(output).toContain('reranker synthetic/no-such-cross-encoder is not in');
  }, 60_000);

  it('reranks with a local cross-encoder (synthetic model): probabilities in 0..1', async () => {
    const t = await startTestApp(LOCAL_RERANKER);
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      await ingest(
        t,
        key,
        datasetId,
        CORPUS.map((content) => ({ content })),
      );
      const response = await t.http
        .post('/v1/mcp/query')
        .set(bearer(key))
        .send({ dataset_id: datasetId, query: 'cell energy', rerank: true, explain: true, limit: 4 })
        .expect(200);
      const results = response.body.results as Result[];
      expect(results).toHaveLength(4);
      for (const r of results) {
        expect(r.rerank_score).toBeGreaterThanOrEqual(0);
        expect(r.rerank_score).toBeLessThanOrEqual(1);
      }
      expect(results.map((r) => r.score)).toEqual([...results.map((r) => r.score)].sort((a, b) => b - a));
    } finally {
      await t.close();
    }
  });

  it('keeps answering other requests while it reranks (the cross-encoder runs in a worker thread)', async () => {
    const t = await startTestApp(LOCAL_RERANKER);
    try {
      const key = await t.createApiKey();
      const datasetId = await createDataset(t.http, key);
      // Real abstracts, so that each of the 20 candidates the cross-encoder reads is long.
      await ingest(t, key, datasetId, [{ content: scifactAbstracts(30) }]);
      const searches = 5;
      const { slowestMs, elapsedMs } = await healthWhile(t, async () => {
        for (let i = 0; i < searches; i++) {
          const response = await t.http
            .post('/v1/mcp/query')
            .set(bearer(key))
            .send({ dataset_id: datasetId, query: 'patients cells study results', rerank: true })
            .expect(200);
          expect(response.body.results).toHaveLength(5);
        }
      });
      // Run on the main thread, the cross-encoder held every other request for the whole run, most
      // of each search's time: here none waits for more than a quarter of a search.
      expect(slowestMs).toBeLessThan(elapsedMs / searches / 4);
    } finally {
      await t.close();
    }
  });
});
