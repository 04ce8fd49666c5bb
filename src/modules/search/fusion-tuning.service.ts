import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { SEARCH_CONFIG, type SearchConfig } from 'src/modules/search/search.config.js';
import { ChunkReadsRepository } from 'src/modules/chunk-index/chunk-reads.repository.js';
import {
  type FusionChoice,
  FusionChoiceRepository,
  type FusionDue,
} from 'src/modules/chunk-index/fusion-choice.repository.js';
import { IndexStateRepository } from 'src/modules/chunk-index/index-state.repository.js';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { parseFilters } from 'src/modules/search/filters.js';
import { fuse } from 'src/modules/search/fusion.js';
import { pseudoQuery } from 'src/modules/search/pseudo-queries.js';
import { QueryVectors } from 'src/modules/search/query-vectors.js';
import { SearchReads } from 'src/modules/search/search-reads.js';
import { MIN_CANDIDATES, SearchLegs } from 'src/modules/search/search-legs.js';
import type { LegHit } from 'src/modules/search/search.types.js';

/** The tuning's constants (docs/search.md, Weights chosen per dataset, says why each is what it is). */
export const TUNING = {
  /** Chunks drawn for pseudo-queries: the cost of a choice, and its evidence. */
  pseudoQueries: 200,
  /** A dataset is judged again once its chunk count has moved by this share since its last choice. */
  changeShare: 0.2,
  /** The semantic weights tried: 0 (keyword alone) to 1 (semantic alone) by tenths. */
  semanticWeights: Array.from({ length: 11 }, (_, i) => i / 10),
  /** A larger semantic weight is chosen only for a gain above this on the pseudo-queries. */
  tolerance: 0.005,
} as const;

/**
 * Chooses each dataset's fusion weights from its own documents (docs/search.md, Weights chosen per
 * dataset): known-item pseudo-queries drawn from its chunks, each leg and each weight judged on how
 * high the fusion ranks the chunk a query came from (nDCG@10 with that one chunk relevant), the
 * smallest semantic weight within `tolerance` of the best kept. In the worker, one dataset at a time:
 * at start and every `FUSION_TUNING_INTERVAL_SECONDS`, each dataset due a choice (`FusionChoiceRepository.due`).
 */
@Injectable()
export class FusionTuningService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopping = false;

  constructor(
    private readonly legs: SearchLegs,
    private readonly choices: FusionChoiceRepository,
    private readonly indexState: IndexStateRepository,
    private readonly chunkReads: ChunkReadsRepository,
    private readonly reads: SearchReads,
    private readonly queryVectors: QueryVectors,
    private readonly embedding: EmbeddingService,
    @Inject(SEARCH_CONFIG) private readonly config: SearchConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    void this.sweep();
    this.timer = setInterval(() => void this.sweep(), this.config.fusionTuningIntervalSeconds * 1000);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /** Chooses the weights of every dataset due a choice (or of `datasetId` alone); never rejects. */
  sweep(datasetId?: string): Promise<void> {
    this.running ??= this.chooseDue(datasetId).finally(() => (this.running = null));
    return this.running;
  }

  private async chooseDue(datasetId?: string): Promise<void> {
    try {
      const provider = this.embedding.current();
      if (!provider) return;
      for (const due of await this.choices.due(
        this.config.fusionTuningMinChunks,
        TUNING.changeShare,
        datasetId,
      )) {
        // Vectors of another model than the service's cannot be searched: judged once re-embedded.
        if (this.stopping || due.embeddingModel !== provider.model) continue;
        const started = performance.now();
        const choice = await this.choose(due);
        if (!choice) continue;
        await this.choices.save(due.datasetSeq, choice);
        this.logger.info(
          {
            dataset_id: due.datasetId,
            weights: { keyword: choice.keywordWeight, semantic: choice.semanticWeight },
            pseudo_queries: choice.pseudoQueries,
            ms: Math.round(performance.now() - started),
          },
          'chose the fusion weights of a dataset',
        );
      }
    } catch (error) {
      if (this.stopping) return;
      this.logger.warn(
        { err: error, dataset_id: datasetId },
        'could not choose the fusion weights of datasets: tried again at the next sweep',
      );
    }
  }

  /** The weights for `due` and their evidence, or null when its chunks give too few pseudo-queries. */
  async choose(due: FusionDue): Promise<Omit<FusionChoice, 'chosenAt'> | null> {
    const read = this.reads.statements(undefined);
    const sample = await this.chunkReads.sample(read, due.datasetSeq, TUNING.pseudoQueries);
    const items = sample.flatMap((chunk) => {
      const query = pseudoQuery(chunk.content, Number(chunk.seq));
      return query ? [{ query, target: chunk.seq }] : [];
    });
    if (items.length < this.config.fusionTuningMinChunks / 2) return null;
    const index = await this.indexState.of(read, due.datasetId);
    const dataset = { id: due.datasetId, seq: due.datasetSeq, language: due.language };
    const vectors = this.queryVectors.all(
      items.map((item) => item.query),
      undefined,
      undefined,
    );
    const filter = parseFilters(undefined);
    const figures = new Map<number, number>(TUNING.semanticWeights.map((w) => [w, 0]));
    for (const { query, target } of items) {
      if (this.stopping) return null;
      const legs = await this.legs.rank(
        { dataset, index },
        query,
        { semantic: true, keyword: true },
        // Each leg's candidates as a hybrid search of 12 results or fewer ranks them.
        { filter, candidates: MIN_CANDIDATES, shown: 0, vector: vectors.get(query) },
      );
      for (const w of TUNING.semanticWeights) {
        figures.set(w, figures.get(w)! + knownItemGain(legs, { keyword: 1 - w, semantic: w }, target));
      }
    }
    const mean = (w: number) => round(figures.get(w)! / items.length);
    const best = Math.max(...TUNING.semanticWeights.map(mean));
    const semanticWeight = TUNING.semanticWeights.find((w) => mean(w) >= best - TUNING.tolerance)!;
    return {
      keywordWeight: round(1 - semanticWeight),
      semanticWeight,
      embeddingModel: due.embeddingModel,
      chunkCount: due.chunkCount,
      pseudoQueries: items.length,
      evidence: {
        keyword: mean(0),
        semantic: mean(1),
        hybrid: Object.fromEntries(TUNING.semanticWeights.map((w) => [w.toFixed(1), mean(w)])),
      },
    };
  }
}

/** nDCG@10 of one query whose only relevant chunk is `target`: 1 / log2(rank + 1) within the first 10. */
function knownItemGain(
  legs: { semantic?: LegHit[]; keyword?: LegHit[] },
  weights: { keyword: number; semantic: number },
  target: string,
): number {
  const rank = fuse(legs, weights)
    .slice(0, 10)
    .findIndex((entry) => entry.chunkSeq === target);
  return rank === -1 ? 0 : 1 / Math.log2(rank + 2);
}

function round(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}
