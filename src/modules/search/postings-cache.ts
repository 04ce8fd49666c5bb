import { POSTING_BYTES, type Postings } from 'src/modules/chunk-index/postings.repository.js';

/** How many postings `mebibytes` of memory hold. */
export function postingsIn(mebibytes: number): number {
  return Math.floor((mebibytes * 2 ** 20) / POSTING_BYTES);
}

interface Entry {
  version: string;
  postings: Postings;
}

/**
 * Term postings kept in memory between queries, least recently used first out, within a budget of
 * postings. An entry is keyed by dataset and term and is only ever returned for the exact version it
 * was read at: the term_stats version changes in the same transaction as the term's postings, so a
 * query that reads versions and any missing postings in one snapshot sees exactly the postings the
 * database holds in that snapshot, whether they come from here or from the database. Versions are
 * compared for equality only: drawn before the statement that writes them (Citus), they need not rise
 * in the order writers commit.
 */
export class PostingsCache {
  /** A Map iterates in insertion order: re-inserting on every hit keeps the oldest entry first. */
  private readonly entries = new Map<string, Entry>();
  private held = 0;

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.held;
  }

  get(datasetSeq: string, term: string, version: string): Postings | undefined {
    const key = keyOf(datasetSeq, term);
    const entry = this.entries.get(key);
    // Another version's entry stays: which of the two is the newer, the versions cannot say.
    if (!entry || entry.version !== version) return undefined;
    this.drop(key, entry);
    this.keep(key, entry);
    return entry.postings;
  }

  /** Keeps a term's postings as read at `version`, in place of any other version of them. */
  set(datasetSeq: string, term: string, version: string, postings: Postings): void {
    if (postings.chunks.length > this.capacity) return;
    const key = keyOf(datasetSeq, term);
    const previous = this.entries.get(key);
    if (previous) this.drop(key, previous);
    for (const [oldest, entry] of this.entries) {
      if (this.held + postings.chunks.length <= this.capacity) break;
      this.drop(oldest, entry);
    }
    this.keep(key, { version, postings });
  }

  private keep(key: string, entry: Entry): void {
    this.entries.set(key, entry);
    this.held += entry.postings.chunks.length;
  }

  private drop(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.held -= entry.postings.chunks.length;
  }
}

function keyOf(datasetSeq: string, term: string): string {
  return `${datasetSeq}\u0000${term}`;
}
