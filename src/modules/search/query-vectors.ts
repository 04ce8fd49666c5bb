import { Injectable } from '@nestjs/common';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { SearchErrors } from 'src/modules/search/search.errors.js';
import type { EarlyVector } from 'src/modules/search/search.types.js';

/**
 * The vectors of search queries, from the embedding provider of the moment (or the one of a dataset's
 * model, `EmbeddingService.forModel`), within a search's deadline.
 */
@Injectable()
export class QueryVectors {
  constructor(private readonly embedding: EmbeddingService) {}

  /**
   * Each distinct query's vector under way (`early`'s, if it is one of them). A batch's queries go to
   * the model in one call where the provider takes several at once; otherwise each is queued on its
   * own (the local model runs one at a time, so a batch never holds more than one of its runs).
   * `early` is a vector of the current provider's: pass none with another `provider`.
   */
  all(
    queries: string[],
    early: Pick<EarlyVector, 'query' | 'vector'> | undefined,
    deadline: AbortSignal | undefined,
    provider = this.embedding.current(),
  ): Map<string, Promise<number[]>> {
    const vectors = new Map<string, Promise<number[]>>();
    if (!provider) return vectors;
    if (early && queries.includes(early.query)) vectors.set(early.query, early.vector);
    const rest = [...new Set(queries)].filter((query) => !vectors.has(query));
    if (rest.length > 1 && provider.embedQueries) {
      const all = this.embedded(provider.embedQueries(rest, deadline), deadline);
      rest.forEach((query, i) =>
        vectors.set(
          query,
          all.then((found) => found[i]),
        ),
      );
    } else {
      for (const query of rest) vectors.set(query, this.one(query, deadline, provider));
    }
    // Not unhandled rejections when the dataset turns out not to be found.
    for (const vector of vectors.values()) vector.catch(() => undefined);
    return vectors;
  }

  /** The query's vector; given up, failing with the deadline's reason, once `deadline` aborts. */
  one(query: string, deadline?: AbortSignal, provider = this.embedding.current()!): Promise<number[]> {
    return this.embedded(provider.embedQuery(query, deadline), deadline);
  }

  /** A model's answer, or the reason it was given up, or 503 embedding_unavailable. */
  private embedded<T>(answer: Promise<T>, deadline: AbortSignal | undefined): Promise<T> {
    return answer.catch((error: unknown) =>
      Promise.reject(givenUp(deadline) ?? SearchErrors.embeddingFailed(String(error))),
    );
  }
}

/**
 * Why work was given up, when it was: the deadline's reason (504 query_timeout, or the error that
 * ended the batch), which a model's failure caused by the abort must not replace.
 */
export function givenUp(deadline: AbortSignal | undefined): Error | undefined {
  return deadline?.aborted ? (deadline.reason as Error) : undefined;
}
