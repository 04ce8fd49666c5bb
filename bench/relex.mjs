// npm run bench:relex — what migration 21 (UnspacedScriptTerms) costs on a database of Chinese and
// Japanese chunks indexed as earlier versions did, each run of Han or kana one term.
//
// The text is Debian's Chinese and Japanese translations of the Debian Reference
// (scripts/install-languages-data.sh), cut into pieces of 500 characters, as many as BENCH_RELEX_CHUNKS
// (100,000) asks, over BENCH_RELEX_DATASETS datasets (4), ten chunks a document, repeated where the
// manuals run out. The chunks and their postings are written with SQL, postings from the text as
// written (to_tsvector of the content, as before the cut); then the migration runs again through
// `cli.js migrate`, timed. Afterwards the bench checks that every term's document frequency is its
// number of postings and each dataset's total length its chunks', and compares each chunk's postings
// with what indexing writes now (to_tsvector of its `lexemeSource`).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { lexemeSource } from '../dist/modules/chunk-index/lexeme-source.js';
import { apiKey, createDatabase, writeResult } from './lib.mjs';

const CHUNKS = Number(process.env.BENCH_RELEX_CHUNKS ?? 100_000);
const DATASETS = Number(process.env.BENCH_RELEX_DATASETS ?? 4);
const CHUNK_CHARS = 500;
const PER_DOCUMENT = 10;
const MANUALS = '/usr/share/debian-reference';
const MIGRATION = 'UnspacedScriptTerms1732000000021';

const pieces = manualPieces();
console.log(`${pieces.length} pieces of ${CHUNK_CHARS} characters from the Chinese and Japanese manuals`);

const database = await createDatabase();
const db = new pg.Pool({ connectionString: database.url, max: 2 });
const result = { chunks: CHUNKS, datasets: DATASETS, chunk_characters: CHUNK_CHARS, pieces: pieces.length };
try {
  const { account_id: accountId } = apiKey(database.url);
  const datasets = [];
  for (let k = 0; k < DATASETS; k++) {
    const { rows } = await db.query(
      `INSERT INTO datasets (id, account_id, name) VALUES ($1, $2, $3) RETURNING seq`,
      [`ds_relex_${k}`, accountId, `relex ${k}`],
    );
    await db.query(`INSERT INTO dataset_index (dataset_seq, dataset_id) VALUES ($1, $2)`, [
      rows[0].seq,
      `ds_relex_${k}`,
    ]);
    datasets.push({ id: `ds_relex_${k}`, seq: rows[0].seq });
  }

  let started = performance.now();
  const BATCH = 5_000;
  for (let first = 0; first < CHUNKS; first += BATCH) {
    const numbers = Array.from({ length: Math.min(BATCH, CHUNKS - first) }, (_, i) => first + i);
    const datasetOf = (n) => datasets[Math.floor(n / PER_DOCUMENT) % DATASETS];
    const documentOf = (n) => `doc_relex_${Math.floor(n / PER_DOCUMENT)}`;
    const starts = numbers.filter((n) => n % PER_DOCUMENT === 0);
    await db.query(
      `INSERT INTO documents (id, dataset_id, dataset_seq, kind, media_type, size_bytes, status, metadata, chunks_created, processed_at)
       SELECT t.id, t.dataset_id, s.seq, 'text', 'text/plain', 0, 'ready', '{}', $3, now()
         FROM unnest($1::text[], $2::text[]) AS t(id, dataset_id) JOIN datasets s ON s.id = t.dataset_id`,
      [starts.map(documentOf), starts.map((n) => datasetOf(n).id), PER_DOCUMENT],
    );
    await db.query(
      `INSERT INTO chunks (id, document_id, dataset_seq, ordinal, content, token_count, char_start, char_end, length)
       SELECT id, document_id, dataset_seq, ordinal, content, char_length(content), 0, char_length(content),
              coalesce((SELECT sum(coalesce(array_length(l.positions, 1), 1))
                          FROM unnest(to_tsvector('english', content)) l), 0)
         FROM unnest($1::text[], $2::text[], $3::bigint[], $4::int[], $5::text[])
              AS t(id, document_id, dataset_seq, ordinal, content)`,
      [
        numbers.map((n) => `chk_relex_${n}`),
        numbers.map(documentOf),
        numbers.map((n) => datasetOf(n).seq),
        numbers.map((n) => n % PER_DOCUMENT),
        numbers.map((n) => pieces[n % pieces.length]),
      ],
    );
  }
  // The postings as an earlier version wrote them: from the text as written, a run one term.
  await db.query(
    `INSERT INTO chunk_terms (dataset_seq, term, chunk_seq, tf, length)
     SELECT c.dataset_seq, l.lexeme, c.seq, coalesce(array_length(l.positions, 1), 1), c.length
       FROM chunks c, unnest(to_tsvector('english', c.content)) l`,
  );
  await db.query(
    `INSERT INTO term_stats (dataset_seq, term, df)
     SELECT dataset_seq, term, count(*) FROM chunk_terms GROUP BY dataset_seq, term`,
  );
  await db.query(
    `UPDATE dataset_index s SET chunk_count = c.n, total_chunk_length = c.total
       FROM (SELECT dataset_seq, count(*) AS n, sum(length) AS total FROM chunks GROUP BY dataset_seq) c
      WHERE s.dataset_seq = c.dataset_seq`,
  );
  await db.query(`VACUUM ANALYZE chunks, chunk_terms, term_stats`);
  result.load_seconds = seconds(started);
  result.postings_before = await count(`SELECT count(*) FROM chunk_terms`);
  result.terms_before = await count(`SELECT count(*) FROM term_stats`);
  console.log(
    `loaded ${CHUNKS} chunks in ${result.load_seconds} s: ${result.postings_before} postings, ` +
      `${result.terms_before} terms`,
  );

  await db.query(`DELETE FROM schema_migrations WHERE name = $1`, [MIGRATION]);
  started = performance.now();
  const applied = execFileSync(process.execPath, ['dist/cli.js', 'migrate'], {
    env: { ...process.env, DATABASE_URL: database.url },
    encoding: 'utf8',
  });
  result.migration_seconds = seconds(started);
  if (!applied.includes(MIGRATION)) throw new Error(`the migration did not run: ${applied}`);
  result.chunks_per_second = Math.round(CHUNKS / result.migration_seconds);
  result.postings_after = await count(`SELECT count(*) FROM chunk_terms`);
  result.terms_after = await count(`SELECT count(*) FROM term_stats`);
  result.wrong_document_frequencies = await count(
    `SELECT count(*) FROM term_stats t
      WHERE t.df <> (SELECT count(*) FROM chunk_terms p WHERE p.dataset_seq = t.dataset_seq AND p.term = t.term)`,
  );
  result.wrong_totals = await count(
    `SELECT count(*) FROM dataset_index s
      WHERE s.total_chunk_length <> (SELECT coalesce(sum(length), 0) FROM chunks WHERE dataset_seq = s.dataset_seq)`,
  );
  result.chunks_unlike_indexing = await unlikeIndexing();
  result.measured_at = new Date().toISOString();
  console.log(
    `migration ${result.migration_seconds} s (${result.chunks_per_second} chunks/s): ` +
      `${result.postings_after} postings, ${result.terms_after} terms; ` +
      `wrong df ${result.wrong_document_frequencies}, wrong totals ${result.wrong_totals}, ` +
      `chunks whose postings differ from indexing's ${result.chunks_unlike_indexing}`,
  );
  console.log(`written to ${writeResult('relex', result)}`);
} finally {
  await db.end();
  await database.drop();
}

/**
 * Chunks whose postings (term, tf) are not those of to_tsvector(lexemeSource(content)), and the terms
 * that differ in the first few (`result.differences`).
 */
async function unlikeIndexing() {
  let unlike = 0;
  result.differences = [];
  for (let first = 0; first < CHUNKS; first += 5_000) {
    const { rows } = await db.query(`SELECT seq, content FROM chunks ORDER BY seq OFFSET $1 LIMIT 5000`, [
      first,
    ]);
    const { rows: differing } = await db.query(
      `SELECT i.seq, ARRAY(SELECT unnest(x.indexing) EXCEPT SELECT unnest(y.migrated)) AS only_indexing,
              ARRAY(SELECT unnest(y.migrated) EXCEPT SELECT unnest(x.indexing)) AS only_migrated
         FROM unnest($1::bigint[], $2::text[]) AS i(seq, source),
              LATERAL (SELECT coalesce(array_agg(l.lexeme || ':' || coalesce(array_length(l.positions, 1), 1)
                                                 ORDER BY l.lexeme), '{}') AS indexing
                         FROM unnest(to_tsvector('english', i.source)) l) x,
              LATERAL (SELECT coalesce(array_agg(p.term || ':' || p.tf ORDER BY p.term), '{}') AS migrated
                         FROM chunk_terms p WHERE p.chunk_seq = i.seq) y
        WHERE x.indexing <> y.migrated`,
      [rows.map((row) => row.seq), rows.map((row) => lexemeSource(row.content))],
    );
    unlike += differing.length;
    for (const row of differing.slice(0, 3 - result.differences.length)) {
      result.differences.push({ only_indexing: row.only_indexing, only_migrated: row.only_migrated });
    }
  }
  return unlike;
}

async function count(sql) {
  const { rows } = await db.query(sql);
  return Number(rows[0].count);
}

function seconds(since) {
  return Math.round(performance.now() - since) / 1000;
}

/** The manuals' text, tags and entities removed, cut into pieces of CHUNK_CHARS characters. */
function manualPieces() {
  const files = readdirSync(MANUALS).filter((name) => /\.(zh-cn|ja)\.html$/.test(name));
  if (files.length === 0) {
    throw new Error(`no translated Debian Reference in ${MANUALS}: run scripts/install-languages-data.sh`);
  }
  const out = [];
  for (const name of files.sort()) {
    const text = readFileSync(join(MANUALS, name), 'utf8')
      .replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' ')
      .replace(/<[^>]+>/g, ' ')
      .replace(/&[a-z#0-9]+;/gi, ' ')
      .replace(/\s+/g, ' ');
    for (let at = 0; at + CHUNK_CHARS <= text.length; at += CHUNK_CHARS) out.push(text.slice(at, at + CHUNK_CHARS));
  }
  return out;
}
