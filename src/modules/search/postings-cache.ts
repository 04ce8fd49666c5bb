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
 * database holds in that snapshot, whether they come from here or from the database.
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
    if (!entry) return undefined;
    this.drop(key, entry);
    const current = entry.version === version;
    // An entry older than the version asked for is stale for good; a newer one is kept for the next
    // query (this one's snapshot began before the term last changed).
    if (!current && isOlder(entry.version, version)) return undefined;
    this.keep(key, entry);
    return current ? entry.postings : undefined;
  }

  /** Keeps a term's postings as read at `version`, unless a newer version of them is held. */
  set(datasetSeq: string, term: string, version: string, postings: Postings): void {
    if (postings.chunks.length > this.capacity) return;
    const key = keyOf(datasetSeq, term);
    const previous = this.entries.get(key);
    if (previous && isOlder(version, previous.version)) return;
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

/** Versions come from one sequence (`term_stats_version`), as the text of a bigint. */
function isOlder(version: string, than: string): boolean {
  return BigInt(version) < BigInt(than);
}

function keyOf(datasetSeq: string, term: string): string {
  return `${datasetSeq}\u0000${term}`;
}
