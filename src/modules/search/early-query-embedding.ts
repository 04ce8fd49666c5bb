import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import type { EarlyStart } from 'src/modules/auth/guards/early-start.seam.js';
import { SearchService } from 'src/modules/search/search.service.js';
import type { EarlyVector } from 'src/modules/search/search.types.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      earlyQueryVector?: EarlyVector;
    }
  }
}

/**
 * Starts a search's query embedding as soon as its caller has authenticated, rather than after the
 * rate limit's round trip to Redis and the body's validation: the embedding is the longest step of a
 * search, and nothing before the database can start without it (docs/search.md). Only when the
 * embedder is idle: a refused request then costs one embedding that delayed nobody, and a caller over
 * its limit cannot queue work ahead of anyone else's.
 */
@Injectable()
export class EarlyQueryEmbedding implements EarlyStart {
  constructor(private readonly search: SearchService) {}

  start(request: Request): void {
    const body = request.body as { query?: unknown; mode?: unknown } | undefined;
    if (typeof body?.query !== 'string' || body.mode === 'keyword') return;
    const startedAt = performance.now();
    const vector = this.search.embedEarly(body.query);
    if (vector) request.earlyQueryVector = { query: body.query, vector, startedAt };
  }
}
