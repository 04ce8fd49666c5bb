import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from 'src/common/logging/logger.js';
import { SEARCH_CONFIG, type SearchConfig } from 'src/modules/search/search.config.js';
import { postingsIn } from 'src/modules/search/postings-cache.js';
import { KeywordLeg } from 'src/modules/search/keyword-leg.js';

/** The warm-up stops reading after this long, whatever is left: start-up must not wait on it for long. */
const WARM_TIME_LIMIT_MS = 30_000;

/**
 * Before an API process listens, reads into memory the postings of the most frequent terms, up to
 * `SEARCH_POSTINGS_WARM_MB` (within `SEARCH_POSTINGS_CACHE_MB`): the first queries then find the
 * common terms' long postings in memory instead of reading them from the database at first use. A
 * failure is logged and start-up goes on.
 */
@Injectable()
export class PostingsWarmer implements OnApplicationBootstrap, OnApplicationShutdown {
  private stopped = false;

  constructor(
    private readonly keywordLeg: KeywordLeg,
    @Inject(SEARCH_CONFIG) private readonly config: SearchConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { postingsWarmMiB, postingsCacheMiB } = this.config;
    const budget = postingsIn(Math.min(postingsWarmMiB, postingsCacheMiB));
    if (budget === 0) return;
    const started = Date.now();
    const deadline = started + WARM_TIME_LIMIT_MS;
    try {
      const postings = await this.keywordLeg.warm(budget, () => this.stopped || Date.now() > deadline);
      this.logger.info({ postings, ms: Date.now() - started }, 'term postings read into memory');
    } catch (err) {
      this.logger.warn({ err }, 'could not read term postings into memory; they are read on demand');
    }
  }

  onApplicationShutdown(): void {
    this.stopped = true;
  }
}
