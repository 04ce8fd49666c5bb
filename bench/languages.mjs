// npm run bench:languages — keyword search in Chinese and Japanese, measured as known-item search on
// Debian's Debian Reference in Simplified Chinese and in Japanese (packages debian-reference-zh-cn and
// -ja; scripts/install-languages-data.sh installs them), with its English original beside them:
// - each section of the manual (the text under a heading up to the next heading) is a document; its
//   heading, its number taken off, is a query whose one right answer is that section. Queries hold at
//   least 2 Han or kana characters, their sections at least 100 characters, and a heading two
//   sections share is no query (bench/debian-reference.mjs);
// - through the HTTP API, one dataset per language (`language` simple for Chinese and Japanese, which
//   PostgreSQL has no configuration for; english for English), the sections uploaded through the bulk
//   route: MRR@10 of keyword search (and of hybrid with potion-base-2M), and the share of queries
//   with no result at all;
// - beside it, a reference: a plain BM25 in this process (k1 1.2, b 0.75) whose terms are the
//   overlapping character pairs of Han and kana runs, as Lucene's CJKBigramFilter cuts them
//   (bench/cjk-bm25.mjs): what a keyword index that reads these languages finds;
// - the score's calibration: of the queries whose right answer comes first, the share scoring at
//   least 0.5 ("moderate" or better by the score guide); of off-topic queries (names of places and
//   currencies from Debian's iso-codes translations, none written in the manual), the share whose best
//   result scores below 0.5 or that get none;
// - indexing throughput: each language's sections into a fresh dataset, from the first upload to the
//   last document ready, as chunks/s, MB/s (UTF-8 bytes of the content) and characters/s, in
//   `BENCH_LANGUAGES_ROUNDS` rounds (5; every other one in the reverse order), their medians, and the
//   Chinese and Japanese seconds per MB (and per million characters) over the English of the same
//   round, the median of the rounds' ratios; and the same of the CPU seconds the server and its
//   database sessions spent on each load, which other work on a busy machine lengthens far less.
// Two runs (`BENCH_LANGUAGES_RUNS`, comma-separated): `keyword`, with no embedding model
// (EMBEDDING_PROVIDER=none: the keyword index alone), and `potion`, with the real static model
// minishlab/potion-base-2M from MODELS_DIR (../shared/models), whose hybrid searches use the weights
// the service chooses for each dataset (the server is started again after the loads to choose them,
// so that no choice runs during a timed load). bench/results/languages.json also holds each query's
// rank of its right answer, by run, mode and the reference, to compare two versions query by query.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import pg from 'pg';
import { bm25Index, segmenterTokens } from './cjk-bm25.mjs';
import { hanKanaCount, knownItems, offTopicNames, referenceFiles } from './debian-reference.mjs';
import {
  apiKey,
  bulkUpload,
  cpuSeconds,
  createDatabase,
  mulberry32,
  pool,
  poster,
  shuffled,
  startServer,
  writeResult,
} from './lib.mjs';

const MODELS = resolve(process.env.MODELS_DIR ?? '../shared/models');
const POTION = 'minishlab/potion-base-2M';
const LANGUAGES = [
  { lang: 'zh-cn', name: 'Chinese', setting: 'simple' },
  { lang: 'ja', name: 'Japanese', setting: 'simple' },
  { lang: 'en', name: 'English', setting: 'english' },
];
const TOP_K = 10;
/** The service's BM25 `b` (BM25_B, docs/search.md), for the reference beside its own 0.75. */
const SERVICE_B = Number(process.env.BM25_B ?? 0.6);
const EQUAL = { keyword: 0.5, semantic: 0.5 };
const OFF_TOPIC = 200;
const ROUNDS = Number(process.env.BENCH_LANGUAGES_ROUNDS ?? 5);
const SEED = 20261202;
const RUNS = {
  keyword: { EMBEDDING_PROVIDER: 'none' },
  potion: { EMBEDDING_PROVIDER: 'local', EMBEDDING_MODEL: POTION, MODELS_DIR: MODELS },
};
const runs = (process.env.BENCH_LANGUAGES_RUNS ?? Object.keys(RUNS).join(',')).split(',');
for (const name of runs) if (!RUNS[name]) throw new Error(`BENCH_LANGUAGES_RUNS: no run ${name}`);
if (runs.includes('potion') && !existsSync(`${MODELS}/${POTION}`)) {
  throw new Error(`${MODELS}/${POTION} is missing: set MODELS_DIR, or BENCH_LANGUAGES_RUNS=keyword`);
}

// The data, and what the reference finds in it.
for (const { lang } of LANGUAGES) referenceFiles(lang); // fails with the install command when missing
const data = LANGUAGES.map((language) => {
  const items = knownItems(language.lang);
  const documents = items.documents.map((section) => ({
    content: section.body,
    metadata: { section: section.id },
  }));
  const offTopic = offTopicNames(language.lang, {
    count: OFF_TOPIC,
    uniform: mulberry32(SEED),
    shuffle: shuffled,
    avoid: items.sections.flatMap((section) => [section.heading, section.body]),
  });
  const letters = items.documents.reduce((sum, d) => sum + (d.body.match(/\p{L}/gu)?.length ?? 0), 0);
  const hanKana = items.documents.reduce((sum, d) => sum + hanKanaCount(d.body), 0);
  return {
    ...language,
    items,
    documents,
    offTopic,
    stats: {
      sections: items.sections.length,
      documents: documents.length,
      queries: items.queries.length,
      headings_shared_by_sections: items.repeated_titles,
      off_topic_queries: offTopic.queries.length,
      off_topic_pool: offTopic.pool,
      off_topic_left_out_as_in_the_manual: offTopic.left_out_as_present,
      characters: documents.reduce((sum, d) => sum + [...d.content].length, 0),
      utf8_bytes: documents.reduce((sum, d) => sum + Buffer.byteLength(d.content), 0),
      // The translations leave some paragraphs in English: the share of letters that are Han or kana.
      han_kana_share_of_letters: round(hanKana / letters),
    },
    reference: referenceFigures(items, offTopic.queries, language.lang),
  };
});
for (const d of data) {
  console.log(
    `${d.name}: ${d.stats.sections} sections, ${d.stats.documents} documents (${d.stats.characters} characters, ` +
      `${d.stats.utf8_bytes} bytes), ${d.stats.queries} queries, ${d.stats.off_topic_queries} off-topic; ` +
      `reference MRR@10 ${d.reference.mrr_at_10}, no result ${pct(d.reference.no_result)}; ` +
      `variants ${JSON.stringify(d.reference.variants)}`,
  );
}

const result = {
  data: 'Debian Reference (Debian packages debian-reference-zh-cn, -ja, -en), HTML, one document a section',
  packages: Object.fromEntries(
    ['debian-reference-zh-cn', 'debian-reference-ja', 'debian-reference-en', 'iso-codes'].map((p) => [
      p,
      packageVersion(p),
    ]),
  ),
  off_topic: 'names of regions and currencies (iso-codes: ISO 3166-2, ISO 4217), none found in the manual',
  top_k: TOP_K,
  languages: Object.fromEntries(
    data.map((d) => [
      d.lang,
      {
        name: d.name,
        dataset_language: d.setting,
        ...d.stats,
        reference: d.reference,
        // Each query as `section id<TAB>query`, in the order of the runs' `ranks`.
        query_list: d.items.queries.map((q) => `${q.id}\t${q.query}`),
      },
    ]),
  ),
  runs: {},
};
for (const name of runs) result.runs[name] = await run(name, RUNS[name]);
result.measured_at = new Date().toISOString();
summary();
console.log(`written to ${writeResult('languages', result)}`);

/** The installed version of Debian package `name`, or null. */
function packageVersion(name) {
  try {
    return execFileSync('dpkg-query', ['-W', '-f=${Version}', name], { encoding: 'utf8' });
  } catch {
    return null;
  }
}

/** MRR@10 and the share of queries without result of the reference BM25 over the documents. */
function referenceFigures(items, offTopicQueries, lang) {
  const index = bm25Index(items.documents.map((section) => ({ id: section.id, text: section.body })));
  const ranks = items.queries.map((q) => index.search(q.query, TOP_K).map((hit) => hit.id));
  return {
    mrr_at_10: round(mean(ranks.map((ids, i) => reciprocalRank(ids, items.queries[i].id)))),
    no_result: round(mean(ranks.map((ids) => (ids.length === 0 ? 1 : 0)))),
    off_topic_no_result: round(mean(offTopicQueries.map((q) => (index.search(q, 1).length === 0 ? 1 : 0)))),
    terms: index.terms,
    ranks: ranks.map((ids, i) => ids.indexOf(items.queries[i].id) + 1).join(' '),
    variants: referenceVariants(items, lang),
  };
}

/**
 * MRR@10 of the reference with the service's `b` (BM25_B, 0.6 by default), and with Han and kana cut by
 * a dictionary (`Intl.Segmenter`) or by both: what the choice of pairs in docs/search.md rests on.
 */
function referenceVariants(items, lang) {
  const documents = items.documents.map((section) => ({ id: section.id, text: section.body }));
  const locale = lang === 'zh-cn' ? 'zh' : lang;
  const mrr = (options) => {
    const index = bm25Index(documents, options);
    const ranks = items.queries.map((q) => index.search(q.query, TOP_K).map((hit) => hit.id));
    return round(mean(ranks.map((ids, i) => reciprocalRank(ids, items.queries[i].id))));
  };
  return {
    [`pairs_b_${SERVICE_B}`]: mrr({ b: SERVICE_B }),
    dictionary_words: mrr({ tokenize: segmenterTokens(locale) }),
    words_and_pairs: mrr({ tokenize: segmenterTokens(locale, { both: true }) }),
    icu: process.versions.icu,
  };
}

/** One run: a fresh database and server with `settings`, the languages loaded, then searched. */
async function run(name, settings) {
  const database = await createDatabase();
  const env = {
    DATABASE_URL: database.url,
    REDIS_PREFIX: `bench_lang_${process.pid}_${name}`,
    INGEST_CONCURRENCY: '32',
    RATE_LIMIT_API_KEY: '10000000',
    ...settings,
  };
  const db = new pg.Pool({ connectionString: database.url, max: 2 });
  const hybrid = settings.EMBEDDING_PROVIDER !== 'none';
  // No fusion weights chosen while loading: a choice would run beside the timed loads.
  let server = await startServer({ ...env, FUSION_TUNING_MIN_CHUNKS: '10000000' });
  try {
    const key = apiKey(database.url);
    const headers = { Authorization: `Bearer ${key.api_key}`, 'Content-Type': 'application/json' };
    const post = poster(server.url, headers);
    console.log(`\n${name} run (${JSON.stringify(settings)})`);

    // A first load that is not timed: the server's code warmed up, its pools opened.
    const warmUp = await post('/v1/datasets', { name: 'warm-up', language: 'english' });
    const english = data.find((d) => d.lang === 'en');
    await load(server, key.api_key, db, warmUp.id, english.documents.slice(0, 60));

    const throughput = Object.fromEntries(data.map((d) => [d.lang, []]));
    const searched = {};
    const others = [warmUp.id];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? data : data.toReversed();
      for (const d of order) {
        const dataset = await post('/v1/datasets', { name: `${d.lang} ${round + 1}`, language: d.setting });
        if (dataset.language !== d.setting) throw new Error(`dataset language ${dataset.language}`);
        const loaded = await load(server, key.api_key, db, dataset.id, d.documents);
        throughput[d.lang].push({ round: round + 1, ...rates(loaded, d.stats) });
        console.log(
          `  load ${d.name} (round ${round + 1}): ${loaded.seconds.toFixed(2)} s, ${loaded.chunks} chunks, ` +
            `${throughput[d.lang].at(-1).mb_per_second} MB/s`,
        );
        if (round === 0) searched[d.lang] = { id: dataset.id, ...loaded };
        else others.push(dataset.id);
      }
    }
    // Only the first round's datasets are searched (and have their weights chosen).
    for (const id of others) {
      const response = await fetch(`${server.url}/v1/datasets/${id}`, { method: 'DELETE', headers });
      if (!response.ok) throw new Error(`delete dataset: ${response.status}`);
    }

    const languages = {};
    for (const d of data) {
      const figures = {
        dataset_id: searched[d.lang].id,
        chunks: searched[d.lang].chunks,
        documents_in_more_than_one_chunk: searched[d.lang].documentsInSeveralChunks,
        postings: searched[d.lang].postings,
        distinct_terms: searched[d.lang].terms,
        throughput: throughputFigures(throughput[d.lang]),
        keyword: await measure(post, searched[d.lang].id, d, 'keyword'),
      };
      languages[d.lang] = figures;
    }
    if (hybrid) {
      // Again with the service's tuning on: each dataset's weights chosen, then its hybrid searches.
      await server.stop();
      server = await startServer({ ...env, FUSION_TUNING_INTERVAL_SECONDS: '1' });
      const again = poster(server.url, headers);
      for (const d of data) {
        const fusion = await chosenFusion(server.url, headers, searched[d.lang].id);
        languages[d.lang].hybrid = { fusion, ...(await measure(again, searched[d.lang].id, d, 'hybrid')) };
        // And at equal weights, the service's before it has chosen: what the semantic leg adds.
        languages[d.lang].hybrid_equal_weights = await measure(
          again,
          searched[d.lang].id,
          d,
          'hybrid',
          EQUAL,
        );
      }
    }
    // Each round's ratio to the English load of the same round, next to it in time (the machine's speed
    // drifts over minutes), and their median.
    for (const d of data) {
      if (d.lang === 'en') continue;
      const over = (key) => {
        const ratios = throughput[d.lang].map((t, i) => t[key] / throughput.en[i][key]);
        return { median: round(median(ratios)), rounds: ratios.map(round) };
      };
      languages[d.lang].seconds_per_mb_over_english = over('seconds_per_mb');
      languages[d.lang].seconds_per_million_characters_over_english = over('seconds_per_million_characters');
      languages[d.lang].cpu_seconds_per_mb_over_english = over('cpu_seconds_per_mb');
      languages[d.lang].cpu_seconds_per_million_characters_over_english = over(
        'cpu_seconds_per_million_characters',
      );
    }
    return { settings: { ...settings }, rounds: ROUNDS, languages };
  } finally {
    await server.stop().catch(() => undefined);
    await db.end();
    await database.drop();
  }
}

/**
 * Uploads `documents` into dataset `datasetId` through the bulk route and waits until none is
 * processing: seconds from the first upload to the last document's `processed_at`, the CPU seconds
 * the server and its database sessions spent meanwhile, chunks, postings.
 */
async function load(server, key, db, datasetId, documents) {
  const cpuBefore = await serviceCpu(server.pid, db);
  const started = Date.now();
  const { refused } = await bulkUpload(server.url, key, datasetId, documents);
  if (refused.length > 0) throw new Error(`refused: ${JSON.stringify(refused[0])}`);
  const deadline = performance.now() + 600_000;
  for (;;) {
    const { rows } = await db.query(
      `SELECT count(*) FILTER (WHERE status = 'processing')::int AS processing,
              count(*) FILTER (WHERE status = 'failed')::int AS failed,
              (extract(epoch FROM max(processed_at)) * 1000)::float8 AS last
         FROM documents WHERE dataset_id = $1`,
      [datasetId],
    );
    if (rows[0].processing === 0) {
      if (rows[0].failed > 0) throw new Error(`${rows[0].failed} documents failed`);
      const {
        rows: [index],
      } = await db.query(
        `SELECT i.chunk_count::int AS chunks,
                (SELECT count(*)::int FROM chunk_terms t WHERE t.dataset_seq = i.dataset_seq) AS postings,
                (SELECT count(*)::int FROM term_stats s WHERE s.dataset_seq = i.dataset_seq) AS terms,
                (SELECT count(*)::int FROM documents d WHERE d.dataset_id = i.dataset_id AND d.chunks_created > 1)
                  AS several
           FROM dataset_index i WHERE i.dataset_id = $1`,
        [datasetId],
      );
      const cpuAfter = await serviceCpu(server.pid, db);
      let sessions = 0;
      for (const [pid, seconds] of cpuAfter.sessions)
        sessions += seconds - (cpuBefore.sessions.get(pid) ?? 0);
      return {
        seconds: (rows[0].last - started) / 1000,
        cpuSeconds: cpuAfter.server - cpuBefore.server + sessions,
        chunks: index.chunks,
        postings: index.postings,
        terms: index.terms,
        documentsInSeveralChunks: index.several,
      };
    }
    if (performance.now() > deadline) throw new Error('documents still processing after 10 minutes');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * CPU seconds so far of the server process (all its threads) and of each session of its database, by
 * pid: a load's cost that other work on the machine does not lengthen, as it does the load's seconds.
 * (PostgreSQL's shared processes, the WAL writer and the checkpointer, are left out.)
 */
async function serviceCpu(serverPid, db) {
  const { rows } = await db.query('SELECT pid FROM pg_stat_activity WHERE datname = current_database()');
  const sessions = new Map();
  for (const { pid } of rows) {
    const seconds = cpuSeconds(pid);
    if (seconds !== null) sessions.set(pid, seconds);
  }
  return { server: cpuSeconds(serverPid), sessions };
}

function rates(loaded, stats) {
  const mb = stats.utf8_bytes / 1e6;
  return {
    seconds: round(loaded.seconds),
    cpu_seconds: round(loaded.cpuSeconds),
    cpu_seconds_per_mb: round(loaded.cpuSeconds / mb),
    cpu_seconds_per_million_characters: round(loaded.cpuSeconds / (stats.characters / 1e6)),
    chunks_per_second: round(loaded.chunks / loaded.seconds),
    mb_per_second: round(mb / loaded.seconds),
    characters_per_second: Math.round(stats.characters / loaded.seconds),
    seconds_per_mb: round(loaded.seconds / mb),
    seconds_per_million_characters: round(loaded.seconds / (stats.characters / 1e6)),
  };
}

/** The rounds' figures, and their medians (the machine's speed drifts; one slow round weighs less). */
function throughputFigures(rounds) {
  const medianOf = (key) => median(rounds.map((r) => r[key]));
  return {
    seconds: medianOf('seconds'),
    chunks_per_second: medianOf('chunks_per_second'),
    mb_per_second: medianOf('mb_per_second'),
    characters_per_second: medianOf('characters_per_second'),
    seconds_per_mb: medianOf('seconds_per_mb'),
    seconds_per_million_characters: medianOf('seconds_per_million_characters'),
    cpu_seconds: medianOf('cpu_seconds'),
    cpu_seconds_per_mb: medianOf('cpu_seconds_per_mb'),
    cpu_seconds_per_million_characters: medianOf('cpu_seconds_per_million_characters'),
    rounds,
  };
}

/** The known-item queries and the off-topic ones of `d` through the search route in `mode` (at `weights`). */
async function measure(post, datasetId, d, mode, weights) {
  const ask = async (query) => {
    const started = performance.now();
    const body = { dataset_id: datasetId, query, limit: TOP_K, mode, ...(weights && { weights }) };
    const { results } = await post('/v1/mcp/query', body);
    return { results, ms: performance.now() - started };
  };
  const known = new Array(d.items.queries.length);
  await pool(d.items.queries, 2, async (q, i) => {
    const { results, ms } = await ask(q.query);
    // Documents in the order of their best chunk: a section cut into chunks counts once.
    const ids = [...new Set(results.map((hit) => hit.metadata.section))];
    known[i] = { rr: reciprocalRank(ids, q.id), none: results.length === 0, first: results[0], ms, id: q.id };
  });
  const offTopic = new Array(d.offTopic.queries.length);
  await pool(d.offTopic.queries, 2, async (query, i) => {
    offTopic[i] = (await ask(query)).results[0];
  });
  const answered = known.filter((k) => k.first?.metadata.section === k.id);
  return {
    mrr_at_10: round(mean(known.map((k) => k.rr))),
    no_result: round(mean(known.map((k) => (k.none ? 1 : 0)))),
    right_answer_first: answered.length,
    right_first_at_least_half: answered.length
      ? round(answered.filter((k) => k.first.score >= 0.5).length / answered.length)
      : null,
    off_topic_best_below_half: round(mean(offTopic.map((hit) => ((hit?.score ?? 0) < 0.5 ? 1 : 0)))),
    off_topic_no_result: round(mean(offTopic.map((hit) => (hit ? 0 : 1)))),
    p50_ms: round(median(known.map((k) => k.ms))),
    // Each query's rank of its right answer (0: not in the first 10), in the order of `query_list`,
    // space-separated.
    ranks: known.map((k) => (k.rr === 0 ? 0 : Math.round(1 / k.rr))).join(' '),
  };
}

/** The weights the service chose for the dataset, waited for (at most 3 minutes), or the default's. */
async function chosenFusion(url, headers, datasetId) {
  const started = performance.now();
  for (;;) {
    const dataset = await (await fetch(`${url}/v1/datasets/${datasetId}`, { headers })).json();
    const waited = round((performance.now() - started) / 1000);
    if (dataset.fusion.source === 'dataset') return { ...dataset.fusion, seconds_waited: waited };
    if (waited > 180)
      return { ...dataset.fusion, seconds_waited: waited, note: 'none chosen within 3 minutes' };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

function summary() {
  const ratio = (x) => (x === undefined ? '-' : x.toFixed(2));
  for (const [name, r] of Object.entries(result.runs)) {
    console.log(
      `\n${name} run (${JSON.stringify(r.settings)}), top_k ${TOP_K}; loads: median of ${r.rounds} rounds`,
    );
    const rows = data.map((d) => {
      const l = r.languages[d.lang];
      const s = result.languages[d.lang];
      const t = l.throughput;
      return [
        d.name,
        d.setting,
        s.queries,
        s.documents,
        l.chunks,
        l.keyword.mrr_at_10.toFixed(3),
        pct(l.keyword.no_result),
        l.hybrid ? l.hybrid.mrr_at_10.toFixed(3) : '-',
        l.hybrid_equal_weights ? l.hybrid_equal_weights.mrr_at_10.toFixed(3) : '-',
        s.reference.mrr_at_10.toFixed(3),
        pct(s.reference.no_result),
        pct(l.keyword.right_first_at_least_half),
        pct(l.keyword.off_topic_best_below_half),
        t.seconds.toFixed(2),
        t.chunks_per_second.toFixed(0),
        t.mb_per_second.toFixed(3),
        String(t.characters_per_second),
        ratio(l.seconds_per_mb_over_english?.median),
        ratio(l.seconds_per_million_characters_over_english?.median),
        t.cpu_seconds.toFixed(2),
        ratio(l.cpu_seconds_per_mb_over_english?.median),
      ];
    });
    table(
      [
        'language',
        'setting',
        'queries',
        'docs',
        'chunks',
        'MRR kw',
        'no res kw',
        'MRR hyb',
        'MRR hyb .5',
        'MRR ref',
        'no res ref',
        'kw first>=.5',
        'kw off<.5',
        's',
        'chunks/s',
        'MB/s',
        'chars/s',
        's/MB / en',
        's/Mchar / en',
        'CPU s',
        'CPU s/MB / en',
      ],
      rows,
    );
    for (const d of data) {
      const l = r.languages[d.lang];
      const reference = result.languages[d.lang].reference;
      console.log(
        `  ${d.name}: right answer first ${l.keyword.right_answer_first} of ${result.languages[d.lang].queries}; ` +
          `off-topic no result ${pct(l.keyword.off_topic_no_result)} (reference ${pct(reference.off_topic_no_result)}); ` +
          `postings ${l.postings}, distinct terms ${l.distinct_terms} (reference ${reference.terms}); ` +
          `seconds by round ${l.throughput.rounds.map((t) => t.seconds.toFixed(2)).join(' ')}` +
          (l.seconds_per_mb_over_english
            ? `; by round, s/MB over English's ${l.seconds_per_mb_over_english.rounds.map((x) => x.toFixed(2)).join(' ')}` +
              `, CPU s/MB over English's ${l.cpu_seconds_per_mb_over_english.rounds.map((x) => x.toFixed(2)).join(' ')}`
            : ''),
      );
      for (const [label, h] of [
        ['chosen', l.hybrid],
        ['equal', l.hybrid_equal_weights],
      ]) {
        if (!h) continue;
        const weights =
          label === 'chosen' ? `${JSON.stringify(h.fusion.weights)} (${h.fusion.source})` : '0.5/0.5';
        console.log(
          `    hybrid at ${weights}: MRR@10 ${h.mrr_at_10.toFixed(3)}, no result ${pct(h.no_result)}, ` +
            `first>=.5 ${pct(h.right_first_at_least_half)}, off<.5 ${pct(h.off_topic_best_below_half)}`,
        );
      }
    }
  }
}

function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => String(row[i]).length)));
  const line = (cells) => cells.map((cell, i) => String(cell).padEnd(widths[i])).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
}

function reciprocalRank(ids, id) {
  const rank = ids.slice(0, TOP_K).indexOf(id);
  return rank === -1 ? 0 : 1 / (rank + 1);
}

function mean(xs) {
  return xs.length === 0 ? 0 : xs.reduce((sum, x) => sum + x, 0) / xs.length;
}

function median(xs) {
  const sorted = xs.toSorted((a, b) => a - b);
  const middle = sorted.length / 2;
  if (sorted.length === 0) return 0;
  return sorted.length % 2 ? sorted[Math.floor(middle)] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function pct(x) {
  return x === null || x === undefined ? '-' : `${(x * 100).toFixed(1)}%`;
}

function round(x) {
  return Math.round(x * 10000) / 10000;
}
