import { Inject, Injectable } from '@nestjs/common';
import { CHUNK_INDEX_CONFIG, type ChunkIndexConfig } from 'src/modules/chunk-index/chunk-index.config.js';
import { SEARCH_CONFIG, type SearchConfig } from 'src/modules/search/search.config.js';
import type { Read } from 'src/database/read.js';
import {
  ChunkReadsRepository,
  type NearChunk,
  type PassingDocuments,
} from 'src/modules/chunk-index/chunk-reads.repository.js';
import { documentCondition } from 'src/modules/search/filters.js';
import { type Calibration, calibrated, semanticCalibration } from 'src/modules/search/relevance.js';
import type { LegHit, LegRequest } from 'src/modules/search/search.types.js';
import { HNSW_SETTINGS, SESSION_EF_SEARCH } from 'src/modules/search/search-pool.js';
import { SearchReads } from 'src/modules/search/search-reads.js';

/**
 * What the HNSW walk costs, in rows of the exact scan, for each candidate it must find in a dataset
 * that has the index to itself (measured: docs/search.md). Sharing the index with other datasets
 * lengthens the walk by the inverse of the dataset's share of it.
 */
const WALK_ROWS_PER_CANDIDATE = 30;
/** How long a process trusts its count of the chunks in an HNSW index (see `indexedChunks`). */
const INDEX_SIZE_TTL_MS = 10_000;

/**
 * Whether the vector leg scans the chunks it may return exactly rather than walk the HNSW index of
 * their dimension: when the scan costs less, or when it would cost about as much (its answer is
 * exact), and never for more than `maxChunks` (`SEARCH_EXACT_SCAN_MAX_CHUNKS`). `chunks` are those the
 * leg may return: the dataset's, or under filters those of the documents that pass them. The index is
 * shared by every dataset of the dimension: to find `candidates` of those chunks, the walk passes about
 * `indexed / chunks` for each, so a small dataset among large ones, or a selective filter, is scanned,
 * and a dataset of its own is walked from a few thousand chunks. A dataset with an HNSW index of its
 * own (`SEARCH_DATASET_INDEX_MIN_CHUNKS`) walks that one: `indexed` is its own chunks.
 */
export function scansExactly(
  searched: { chunks: number; indexed: number },
  candidates: number,
  maxChunks: number,
): boolean {
  const { chunks, indexed } = searched;
  if (chunks > maxChunks) return false;
  const walk = WALK_ROWS_PER_CANDIDATE * candidates * (Math.max(indexed, chunks) / Math.max(chunks, 1));
  return chunks <= walk;
}

/** A chunk near the query as the vector leg's hit: its cosine similarity, and that read through the model's calibration. */
function hitOf({ distance, removed, ...row }: NearChunk, calibration: Calibration): LegHit {
  return {
    chunkSeq: row.seq,
    score: 1 - distance,
    relevance: calibrated(1 - distance, calibration),
    removed,
    row,
  };
}

/**
 * The vector leg: cosine similarity to the query vector, once it is there, best first, with the chunks'
 * rows. A dataset is scanned exactly (through its own rows) when that costs less (see `scansExactly`);
 * otherwise the leg walks the HNSW index of the dimension with pgvector's iterative scan, which keeps
 * walking the graph until `candidates` rows pass the dataset and metadata filters.
 *
 * Only the best `shown` hits carry their document's metadata. A hit below that can still be shown when
 * the keyword leg ranked it too (fusion adds the two); its metadata is then read after the fusion,
 * unless the keyword leg's row has it. A hit of this leg alone cannot: each of the hits above it scores
 * more in the fusion than it does.
 */
@Injectable()
export class VectorLeg {
  /** Datasets of more chunks are never scanned exactly (`SEARCH_EXACT_SCAN_MAX_CHUNKS`). */
  private readonly exactScanMaxChunks: number;
  /** The chunks of each dimension's HNSW index, as counted at most `INDEX_SIZE_TTL_MS` ago. */
  private readonly indexSizes = new Map<number, { countedAt: number; chunks: Promise<number> }>();

  /** Calibration points configured by model (`SEMANTIC_CALIBRATION`). */
  private readonly calibrations: Record<string, Calibration>;

  /** Whether the database is a Citus cluster, asked once. */
  private distributed?: Promise<boolean>;

  constructor(
    private readonly reads: SearchReads,
    private readonly chunkReads: ChunkReadsRepository,
    @Inject(SEARCH_CONFIG) config: Pick<SearchConfig, 'semanticCalibrations'>,
    @Inject(CHUNK_INDEX_CONFIG) index: Pick<ChunkIndexConfig, 'exactScanMaxChunks'>,
  ) {
    this.exactScanMaxChunks = index.exactScanMaxChunks;
    this.calibrations = config.semanticCalibrations;
  }

  async rank(
    dataset: {
      id: string;
      seq: string;
      chunks: number;
      dimensions: number;
      model: string;
      ownIndex?: boolean;
    },
    embedding: Promise<number[]>,
    { filter, passing, candidates, shown, deadline }: LegRequest,
  ): Promise<LegHit[]> {
    // How the filters are applied depends on how many chunks pass them.
    if (filter.fields > 0 && !passing)
      throw new Error('the vector leg needs the count of the documents passing the filters');
    const read = this.reads.statements(deadline);
    const reach = passing ? await passing : null;
    if (reach?.documents === 0) return [];
    // The chunks the leg may return, of all the dataset's that the index holds.
    const chunks = reach?.chunks ?? dataset.chunks;
    const choose = (indexed: number) =>
      scansExactly(
        { chunks, indexed: Math.max(indexed, dataset.chunks) },
        candidates,
        this.exactScanMaxChunks,
      );
    // A dataset with an index of its own walks that one (the planner picks it). Otherwise the shared
    // index's size is counted (while the query is embedded) only when it can change the choice: when
    // the dataset alone in the index and among any number of others would not be searched alike.
    const alone = choose(dataset.chunks);
    const exact =
      dataset.ownIndex || alone === choose(Number.MAX_SAFE_INTEGER)
        ? Promise.resolve(alone)
        : this.indexedChunks(dataset.dimensions).then(choose);
    exact.catch(() => undefined); // awaited below, unless the embedding fails first
    const vector = await embedding;
    const calibration = semanticCalibration(dataset.model, this.calibrations);
    const run = async (read: Read, exact: boolean): Promise<LegHit[]> => {
      const rows = await this.chunkReads.nearest(read, {
        datasetSeq: dataset.seq,
        datasetId: dataset.id,
        model: dataset.model,
        vector,
        candidates,
        shown,
        condition: filter.fields > 0 ? documentCondition(filter) : null,
        exact,
      });
      return rows.map((near) => hitOf(near, calibration));
    };
    if (await exact) return run(read, true);
    const hits = await this.walking(read, candidates, deadline, (read) => run(read, false));
    // The index is shared by all datasets of this dimension: when the walk gave up before `candidates`
    // rows passed this dataset's filters, the exact scan over the rows it may return finds them all.
    return hits.length < candidates ? run(read, true) : hits;
  }

  /**
   * The vector leg of several datasets of one model and dimension (none with an index of its own), in
   * one walk of their shared HNSW index: the `candidates` chunks nearest to the query among all of
   * them, by dataset (seq). What one walk passes for them together is about what a walk for one of
   * them alone would (their share of the index is larger), where each alone is scanned exactly or
   * walked through the others' chunks. Null when they are best ranked one by one: on Citus (each leg
   * then runs in its dataset's shard, beside the others), when `scansExactly` would scan them all
   * (each dataset's scan then runs beside the others', in its own process), or when the walk gave up
   * before it found `candidates`.
   */
  async rankAcross(
    datasets: { seq: string; chunks: number; passing?: Promise<PassingDocuments> }[],
    { model, dimensions }: { model: string; dimensions: number },
    embedding: Promise<number[]>,
    { filter, candidates, shown, deadline }: Omit<LegRequest, 'passing'>,
  ): Promise<Map<string, LegHit[]> | null> {
    const read = this.reads.statements(deadline);
    // On Citus each dataset's leg runs in its own shard, and the shards beside one another: one walk
    // across shards (a LIMIT below a join) is a plan Citus refuses (docs/citus.md).
    if (await this.isDistributed(read)) return null;
    const [indexed, reaches] = await Promise.all([
      this.indexedChunks(dimensions),
      Promise.all(datasets.map(({ passing }) => passing ?? Promise.resolve(null))),
    ]);
    const chunks = datasets.reduce((sum, dataset, i) => sum + (reaches[i]?.chunks ?? dataset.chunks), 0);
    const searched = datasets.filter((_, i) => reaches[i]?.documents !== 0);
    const byDataset = new Map(datasets.map(({ seq }): [string, LegHit[]] => [seq, []]));
    if (searched.length === 0) return byDataset;
    if (scansExactly({ chunks, indexed }, candidates, this.exactScanMaxChunks)) return null;
    const vector = await embedding;
    const calibration = semanticCalibration(model, this.calibrations);
    const walk = (read: Read) =>
      this.chunkReads.nearestAcross(read, {
        datasetSeqs: searched.map(({ seq }) => seq),
        model,
        vector,
        candidates,
        shown,
        condition: filter.fields > 0 ? documentCondition(filter) : null,
      });
    const rows = await this.walking(read, candidates, deadline, walk);
    if (rows.length < candidates) return null;
    for (const { datasetSeq, ...near } of rows) byDataset.get(datasetSeq)!.push(hitOf(near, calibration));
    return byDataset;
  }

  /**
   * `walk` of the HNSW index for `candidates`: a bare statement when the session's `hnsw.ef_search`
   * covers them, else in a transaction of its own that raises it. On Citus always in a transaction
   * that sets pgvector's settings, which is how they reach the workers that walk (`HNSW_SETTINGS`).
   */
  private async walking<T>(
    read: Read,
    candidates: number,
    deadline: AbortSignal | undefined,
    walk: (read: Read) => Promise<T>,
  ): Promise<T> {
    const distributed = await this.isDistributed(read);
    if (candidates <= SESSION_EF_SEARCH && !distributed) return walk(read);
    const efSearch = Math.max(candidates, SESSION_EF_SEARCH);
    return this.reads.transaction('READ COMMITTED', walk, {
      deadline,
      settings: distributed
        ? { ...HNSW_SETTINGS, 'hnsw.ef_search': efSearch }
        : { 'hnsw.ef_search': efSearch },
    });
  }

  /** Whether the database is a Citus cluster: asked once (again after a failed asking). */
  private isDistributed(read: Read): Promise<boolean> {
    this.distributed ??= read<{ citus: boolean }>(
      `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') AS citus`,
    ).then(
      ([row]) => row.citus,
      (error: unknown) => {
        this.distributed = undefined;
        throw error;
      },
    );
    return this.distributed;
  }

  /**
   * The chunks of all datasets embedded at `dimensions`, which the HNSW index of the dimension holds
   * (each dataset's count is exact; their sum is read again every `INDEX_SIZE_TTL_MS`: it only chooses
   * how the leg searches, and a count a few seconds old chooses as well).
   */
  private indexedChunks(dimensions: number): Promise<number> {
    const known = this.indexSizes.get(dimensions);
    if (known && performance.now() - known.countedAt < INDEX_SIZE_TTL_MS) return known.chunks;
    // Shared by the searches of the next seconds: not cancelled at the deadline of the one that asked.
    const chunks = this.chunkReads.indexedChunks(this.reads.statements(), dimensions);
    const entry = { countedAt: performance.now(), chunks };
    this.indexSizes.set(dimensions, entry);
    // A failed count is not kept (the next search counts again), and fails the search it was for.
    chunks.catch(() => {
      if (this.indexSizes.get(dimensions) === entry) this.indexSizes.delete(dimensions);
    });
    return chunks;
  }
}
