import { Injectable } from '@nestjs/common';
import type { Read } from 'src/database/read.js';
import {
  type Postings,
  PostingsRepository,
  type QueryTerm,
  type VersionedPostings,
} from 'src/modules/chunk-index/postings.repository.js';
import { ChunkReadsRepository } from 'src/modules/chunk-index/chunk-reads.repository.js';
import { type Bm25Parameters, bm25Ceiling, rankBm25, type Scored } from 'src/modules/search/bm25.js';
import { documentCondition, type ParsedFilter } from 'src/modules/search/filters.js';
import { PostingsCache } from 'src/modules/search/postings-cache.js';
import { keywordRelevance } from 'src/modules/search/relevance.js';
import type { LegHit, LegRequest } from 'src/modules/search/search.types.js';
import { SearchReads } from 'src/modules/search/search-reads.js';

/** The query terms' postings and the statistics BM25 needs, all from one state of the dataset. */
interface TermsSnapshot {
  n: number;
  total: number;
  postings: Postings[];
  /** Distinct query terms no chunk holds: they count against the ceiling (`bm25Ceiling`). */
  absent: number;
  /** `QueryTerm.removed`; none when the query has no terms. */
  removed?: string;
}

/** A query term some chunk of the dataset holds. */
type HeldTerm = QueryTerm & { version: string };

/**
 * How many ranked chunks the leg hands the filter check at first, per result it wants: the check stops
 * at the `limit`-th chunk that passes (see `firstPassing`), so a longer list costs only its ranking and
 * its size on the wire, while a list too short for the filter costs another round trip and another
 * ranking. Sixteen per result covers a filter that passes one chunk in ten with room to spare.
 */
const CHECKED_PER_RESULT = 16;
/** How much deeper the leg ranks each time the chunks ranked so far held too few that pass. */
const RANK_GROWTH = 8;
/**
 * The most chunks passing the filters that the leg reads to rank only those (see `ranksPassing`);
 * beyond, it checks its ranking instead, whatever share of the dataset they are.
 */
const PASSING_SET_MAX_CHUNKS = 20_000;

/**
 * Whether the keyword leg ranks only the chunks that pass the filters, read first in the ranking's
 * snapshot, rather than check its ranking against the filters (`firstPassing`): when they are fewer
 * than one in `CHECKED_PER_RESULT` of the dataset's chunks, so that the check's first round would
 * not find enough and it would rank and check again (twice, for a filter keeping 1%), and few enough
 * to read at once. `passing` is the count of `passingDocuments`, which only chooses: the answer
 * comes from the snapshot. Without a count (no vector leg), a first check that falls short chooses.
 */
export function ranksPassing(passing: number, datasetChunks: number): boolean {
  return passing <= PASSING_SET_MAX_CHUNKS && passing * CHECKED_PER_RESULT < datasetChunks;
}

/** Terms whose postings one round of the warm-up reads. */
const WARM_TERMS_PER_STATEMENT = 200;
/** The most terms the warm-up considers, whatever its budget. */
const WARM_MAX_TERMS = 1_000_000;

/**
 * The keyword leg: exact Okapi BM25 (see `rankBm25`) over the dataset's postings, best first, of chunks
 * of documents that pass the filters, with their rows. Postings are kept in memory between
 * queries (`PostingsCache`) at the version they were read at.
 */
@Injectable()
export class KeywordLeg {
  constructor(
    private readonly reads: SearchReads,
    private readonly postingsRepository: PostingsRepository,
    private readonly chunkReads: ChunkReadsRepository,
    private readonly cache: PostingsCache,
  ) {}

  /**
   * The dataset's statistics, the query terms' document frequencies and their postings always come
   * from one state of the dataset, so concurrent ingestion never mixes two (see `terms`). Postings exist
   * only for searchable chunks (written with them, removed with them), so without a filter the ranking
   * is the answer; with one, the filter is checked in the snapshot the ranking came from.
   *
   * Without a filter, only the best `shown` hits come with their rows: a hit of this leg alone ranked
   * below the results shown is never shown (as in `VectorLeg`), and the rows of those that can be are
   * read after the fusion (see `SearchService`), off the path the query's embedding takes.
   */
  async rank(
    dataset: { id: string; seq: string; language: string; chunkCount: number },
    query: string,
    bm25: Bm25Parameters,
    { filter, passing, candidates, shown, deadline }: LegRequest,
  ): Promise<LegHit[]> {
    const { seq: datasetSeq, language } = dataset;
    const rank =
      ({ postings, n, total }: TermsSnapshot, only?: ReadonlySet<number>) =>
      (k: number) =>
        rankBm25(postings, n, total, bm25, k, only);
    // Each hit's relevance: its BM25 against the most the query could score in this snapshot.
    const judged = (terms: TermsSnapshot, hits: Omit<LegHit, 'relevance'>[]): LegHit[] => {
      const dfs = [
        ...terms.postings.map(({ chunks }) => chunks.length),
        ...new Array<number>(terms.absent).fill(0),
      ];
      const ceiling = bm25Ceiling(dfs, terms.n, bm25);
      return hits.map((hit) => ({
        ...hit,
        ceiling,
        terms: dfs.length,
        removed: terms.removed,
        relevance: keywordRelevance(hit.score, ceiling, dfs.length),
      }));
    };
    if (filter.fields > 0) {
      return this.reads.transaction(
        'REPEATABLE READ',
        async (read) => {
          const terms = (await this.terms(read, datasetSeq, language, query, true))!;
          if (terms.postings.length === 0) return [];
          // The passing chunks alone, ranked, with the rows of those that can be shown; null when
          // more than the leg reads at once.
          const amongPassing = async () => {
            const only = await this.chunkReads.passingChunks(
              read,
              dataset.id,
              documentCondition(filter),
              PASSING_SET_MAX_CHUNKS,
            );
            if (!only) return null;
            return this.withShownRows(
              datasetSeq,
              rank(terms, only)(candidates).ranked,
              shown,
              deadline,
              read,
            );
          };
          // Counted (when the vector leg runs too), the passing chunks choose the way at once;
          // otherwise a first check that finds too few is the sign that they are few.
          const count = passing && (await passing).chunks;
          const few = count === undefined ? undefined : ranksPassing(count, dataset.chunkCount);
          const hits =
            (few && (await amongPassing())) ||
            (await this.firstPassing(
              read,
              rank(terms),
              filter,
              candidates,
              few === undefined && amongPassing,
            ));
          return judged(terms, hits);
        },
        { deadline },
      );
    }
    const terms =
      (await this.terms(this.reads.statements(deadline), datasetSeq, language, query, false)) ??
      (await this.reads.transaction(
        'REPEATABLE READ',
        (read) => this.terms(read, datasetSeq, language, query, true),
        { deadline },
      ));
    const snapshot = terms!;
    // The ranking is the snapshot's: a chunk deleted since keeps its rank, without a row, and is
    // left out when the results are read (see SearchService).
    const ranked = rank(snapshot)(candidates).ranked;
    return judged(snapshot, await this.withShownRows(datasetSeq, ranked, shown, deadline));
  }

  /**
   * The ranked chunks as hits, the first `shown` with their rows: read through `read` (a snapshot)
   * when given, else in a statement of their own.
   */
  private async withShownRows(
    datasetSeq: string,
    ranked: Scored[],
    shown: number,
    deadline?: AbortSignal,
    read: Read = this.reads.statements(deadline),
  ): Promise<Omit<LegHit, 'relevance'>[]> {
    const seqs = ranked.slice(0, shown).map(({ chunk }) => String(chunk));
    const rows = await this.chunkReads.chunks(read, datasetSeq, seqs);
    return ranked.map(({ chunk, score }) => {
      const chunkSeq = String(chunk);
      return { chunkSeq, score, row: rows.get(chunkSeq) };
    });
  }

  /**
   * Reads into memory the postings of the most frequent terms of all datasets, most postings first,
   * until `budget` postings: the terms most queries hold and the slowest to read on demand. Each is
   * kept at the version it was read with, like any other (see `PostingsCache`), so warming never
   * changes an answer. Stops early when `stop()` says so. Returns the number of postings read.
   */
  async warm(budget: number, stop: () => boolean): Promise<number> {
    const read = this.reads.statements();
    const frequent = await this.postingsRepository.mostFrequentTerms(read, Math.min(budget, WARM_MAX_TERMS));
    let total = 0;
    const chosen = frequent.filter(({ df }) => (total += df) <= budget);
    let postings = 0;
    for (let i = 0; i < chosen.length && !stop(); i += WARM_TERMS_PER_STATEMENT) {
      // In order of frequency, whatever their dataset, so that stopping early leaves out the rarest.
      const byDataset = new Map<string, string[]>();
      for (const { datasetSeq, term } of chosen.slice(i, i + WARM_TERMS_PER_STATEMENT)) {
        const terms = byDataset.get(datasetSeq) ?? [];
        terms.push(term);
        byDataset.set(datasetSeq, terms);
      }
      for (const [datasetSeq, terms] of byDataset) {
        if (stop()) break;
        for (const row of await this.postingsRepository.postings(read, datasetSeq, terms)) {
          postings += this.remember(datasetSeq, row).chunks.length;
        }
      }
    }
    return postings;
  }

  /**
   * The query's terms with their document frequencies and postings, and the dataset's statistics.
   * Postings in memory at the version the terms were read at are not read again; those that are not
   * are read with their current version. In one transaction (`inSnapshot`), that version is the same.
   * Statement by statement it may have moved on, when ingestion wrote the term in between: then this
   * returns null, and the caller asks again in a transaction. The postings come in the terms' order,
   * wherever they were found (see `postings`).
   */
  private async terms(
    read: Read,
    datasetSeq: string,
    language: string,
    query: string,
    inSnapshot: boolean,
  ): Promise<TermsSnapshot | null> {
    const terms = await this.postingsRepository.queryTerms(read, datasetSeq, language, query);
    if (terms.length === 0) return { n: 0, total: 0, postings: [], absent: 0 };
    const held = terms.filter(({ version }) => version !== null) as HeldTerm[];
    const postings = held.length > 0 ? await this.postings(read, datasetSeq, held, inSnapshot) : [];
    return (
      postings && {
        n: terms[0].n,
        total: terms[0].total,
        postings,
        absent: terms.length - postings.length,
        removed: terms[0].removed,
      }
    );
  }

  /**
   * The terms' postings, from memory when the version there is current, else from the database; null
   * when, statement by statement, a term read from the database is not at the version asked for (see
   * `terms`). In one snapshot the versions are those asked for, and a term without postings (which
   * `term_stats` should not list) is taken as having none.
   *
   * The postings come in the order of `terms`, whichever were in memory: scores are sums of floats,
   * whose last bit depends on the order they are added in, and a chunk's score must not depend on
   * what the process happens to hold in memory.
   */
  private async postings(
    read: Read,
    datasetSeq: string,
    terms: HeldTerm[],
    inSnapshot: boolean,
  ): Promise<Postings[] | null> {
    const found = new Map<string, Postings>();
    const missing = new Map<string, string>();
    for (const { term, version } of terms) {
      const postings = this.cache.get(datasetSeq, term, version);
      if (postings) found.set(term, postings);
      else missing.set(term, version);
    }
    if (missing.size > 0) {
      const rows = await this.postingsRepository.postings(read, datasetSeq, [...missing.keys()]);
      const moved = (): boolean =>
        rows.length !== missing.size || rows.some(({ term, version }) => missing.get(term) !== version);
      if (!inSnapshot && moved()) return null;
      for (const row of rows) found.set(row.term, this.remember(datasetSeq, row));
    }
    return terms.flatMap(({ term }) => found.get(term) ?? []);
  }

  /** A term's postings as read, kept in memory at their version. */
  private remember(datasetSeq: string, { term, version, postings }: VersionedPostings): Postings {
    this.cache.set(datasetSeq, term, version, postings);
    return postings;
  }

  /**
   * The best-ranked chunks whose documents pass the filters, at most `limit`, with
   * their rows. One statement checks the ranked chunks in rank order and stops at the `limit`-th that
   * passes, so it reads the rows the answer needs and no more, in one round trip. Only when the
   * chunks ranked so far hold too few that pass does the leg rank deeper (`RANK_GROWTH` times) and
   * check the chunks it had not, until `limit` pass or no ranked chunk is left; or, when the first
   * check fell short, take the answer of `whenShort` instead, unless it has none.
   */
  private async firstPassing(
    read: Read,
    rank: (k: number) => { ranked: Scored[]; matched: number },
    filter: ParsedFilter,
    limit: number,
    whenShort: false | (() => Promise<Omit<LegHit, 'relevance'>[] | null>),
  ): Promise<Omit<LegHit, 'relevance'>[]> {
    const hits: Omit<LegHit, 'relevance'>[] = [];
    let checked = 0;
    for (let depth = CHECKED_PER_RESULT * limit; hits.length < limit; depth *= RANK_GROWTH) {
      const { ranked, matched } = rank(depth);
      const round = ranked.slice(checked);
      const passing = await this.chunkReads.passing(
        read,
        round.map(({ chunk }) => chunk),
        limit - hits.length,
        documentCondition(filter),
      );
      // Each row's place in the list it was checked in (from 1) gives its score.
      for (const { rank, ...row } of passing) {
        hits.push({ chunkSeq: row.seq, score: round[rank - 1].score, row });
      }
      checked = ranked.length;
      if (checked >= matched) break;
      if (whenShort && depth === CHECKED_PER_RESULT * limit && hits.length < limit) {
        const answer = await whenShort();
        if (answer) return answer;
      }
    }
    return hits;
  }
}
