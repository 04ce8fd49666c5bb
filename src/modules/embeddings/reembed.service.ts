import { Injectable } from '@nestjs/common';
import { AppError } from 'src/common/errors/app-error.js';
import { DatasetErrors } from 'src/modules/datasets/datasets.errors.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { ChunkVectorsRepository } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import { DatasetVectorIndexRepository } from 'src/modules/chunk-index/dataset-vector-index.repository.js';
import { ReembedErrors } from 'src/modules/embeddings/reembed.errors.js';
import { type ReembeddingLock, ReembedRepository } from 'src/modules/embeddings/reembed.repository.js';

const PAGE = 256;

/** A re-embedding as the API shows it (`GET /v1/datasets/{id}/reembedding`). */
export interface ReembeddingStatus {
  dataset_id: string;
  status: 'building' | 'none';
  /** The model of the vectors searched meanwhile (null: none yet), and the one being built. */
  from_model: string | null;
  model: string | null;
  dimensions: number | null;
  requested_at: string | null;
  chunks_total: number;
  chunks_embedded: number;
}

/**
 * A dataset's move to another model without losing its semantic half meanwhile. The new model's
 * vectors are built beside the searched ones (the next generation, `chunks.next_embedding`), page by
 * page, while searches go on with the old model's (a process with the old model as
 * `EMBEDDING_PREVIOUS_MODEL` embeds their queries); chunks indexed meanwhile get the new model's
 * vectors there. Once every chunk has one, one transaction makes them the searched vectors and the new
 * model the dataset's, and the old vectors are gone: a search sees one model or the other, never both.
 *
 * A build is requested (`request`: the API, or `datasets reembed`) and then run by a process whose
 * provider is of the requested model (`build`: a worker's ReembeddingWorker, or the command itself).
 * It is kept in the database, page by page: a build interrupted is taken up where it stopped. One
 * run at a time per dataset, under the re-embedding lock (`reembed_in_progress` for a second), and a
 * run whose lock's session ended stops at its next write (`reembed_lock_lost`).
 * A dataset's own vector index of another dimension is dropped after the switch.
 *
 * `embedMissing` is the lighter run of the catch-up (VectorCatchUpService): it embeds only the chunks
 * indexed without a vector, under the same lock.
 */
@Injectable()
export class ReembedService {
  constructor(
    private readonly repository: ReembedRepository,
    private readonly chunkVectors: ChunkVectorsRepository,
    private readonly embedding: EmbeddingService,
    private readonly vectorIndexes: DatasetVectorIndexRepository,
  ) {}

  /**
   * Requests the dataset's move to the provider's model (the process's own by default): built
   * beside its vectors by the next run of `build`. A build of that model under way already is the
   * answer; one of another model is a 409 (cancel it first).
   */
  async request(datasetId: string, provider = this.embedding.current()): Promise<ReembeddingStatus> {
    if (!provider) throw ReembedErrors.keywordOnly();
    const model = { name: provider.model, dimensions: provider.dimensions };
    const outcome = await this.repository.requestGeneration(datasetId, model);
    if (outcome === null) throw DatasetErrors.notFound(datasetId);
    if (outcome === 'other') throw ReembedErrors.inProgress(datasetId);
    return this.status(datasetId);
  }

  /** The dataset's re-embedding: the generation being built and how far, or `none`. */
  async status(datasetId: string): Promise<ReembeddingStatus> {
    const generation = await this.chunkVectors.generation(datasetId);
    if (!generation) {
      if ((await this.repository.datasetSeq(datasetId)) === null) throw DatasetErrors.notFound(datasetId);
      const none = { model: null, dimensions: null, requested_at: null, from_model: null };
      return { dataset_id: datasetId, status: 'none', ...none, chunks_total: 0, chunks_embedded: 0 };
    }
    return {
      dataset_id: datasetId,
      status: 'building',
      from_model: generation.fromModel,
      model: generation.model,
      dimensions: generation.dimensions,
      requested_at: generation.requestedAt.toISOString(),
      chunks_total: generation.chunks,
      chunks_embedded: generation.embedded,
    };
  }

  /**
   * Drops the generation being built: the dataset keeps its model. A run under way stops at its next
   * write. Whether there was one.
   */
  async cancel(datasetId: string): Promise<boolean> {
    if ((await this.repository.datasetSeq(datasetId)) === null) throw DatasetErrors.notFound(datasetId);
    return this.repository.cancelGeneration(datasetId);
  }

  /** The dataset's key in the index's tables, or null when it is gone. */
  datasetSeq(datasetId: string): Promise<string | null> {
    return this.repository.datasetSeq(datasetId);
  }

  /**
   * Gives the dataset's chunks indexed without a vector theirs, of `provider`'s model, which becomes
   * the dataset's when it has none; page by page, in key order, the dataset staying in search (the
   * vector leg finds the chunks embedded so far). Stops early when the dataset turns out to hold
   * another model's vectors or to be re-embedded. Returns how many chunks it embedded, or null when
   * another run holds the dataset's lock.
   */
  async embedMissing(
    datasetId: string,
    provider: EmbeddingProvider,
    signal: AbortSignal,
  ): Promise<number | null> {
    const seq = await this.repository.datasetSeq(datasetId);
    if (seq === null) return 0;
    const model = { name: provider.model, dimensions: provider.dimensions };
    return this.repository.withReembeddingLock(datasetId, async (lock) => {
      let done = 0;
      for (let after = '0'; ;) {
        const page = await this.chunkVectors.chunksWithoutVector(seq, PAGE, after);
        if (page.length === 0) return done;
        signal.throwIfAborted();
        const vectors = await provider.embedPassages(page.map((chunk) => chunk.content));
        const seqs = page.map((chunk) => chunk.seq);
        const outcome = await this.repository.fillVectors(lock, seqs, vectors, model);
        if (outcome === 'lost') throw ReembedErrors.stopped(datasetId, 'lost');
        if (outcome === 'refused') return done;
        done += page.length;
        after = seqs[seqs.length - 1];
      }
    });
  }

  /**
   * `datasets reembed`: requests the move to the process's model and builds it here, telling
   * `onProgress` the chunks embedded so far. 409 when another run holds the dataset.
   */
  async reembed(datasetId: string, onProgress: (done: number) => void = () => undefined) {
    const provider = this.embedding.current();
    if (!provider) throw new AppError(400, 'embedding_unavailable', 'No embedding provider is configured');
    await this.request(datasetId, provider);
    const result = await this.build(datasetId, provider, undefined, onProgress);
    if (!result) throw ReembedErrors.inProgress(datasetId);
    return result;
  }

  /**
   * Builds the dataset's next generation with `provider`, whose model it must be of, and switches to
   * it; null, at once, when another run holds the dataset. Stops (409) when the build is cancelled
   * or its lock lost meanwhile, and when `signal` aborts, each after a page at most.
   */
  async build(
    datasetId: string,
    provider: EmbeddingProvider,
    signal?: AbortSignal,
    onProgress: (done: number) => void = () => undefined,
  ) {
    const seq = await this.repository.datasetSeq(datasetId);
    if (seq === null) throw DatasetErrors.notFound(datasetId);
    return this.repository.withReembeddingLock(datasetId, (lock) =>
      this.run(lock, seq, provider, signal, onProgress),
    );
  }

  private async run(
    lock: ReembeddingLock,
    seq: string,
    provider: EmbeddingProvider,
    signal: AbortSignal | undefined,
    onProgress: (done: number) => void,
  ) {
    const { datasetId } = lock;
    const model = { name: provider.model, dimensions: provider.dimensions };
    let done = 0;
    for (;;) {
      // Chunks indexed after the cursor went past are found by the next round (the switch says so).
      for (let after = '0'; ;) {
        const page = await this.chunkVectors.chunksWithoutNextVector(seq, PAGE, after);
        if (page.length === 0) break;
        signal?.throwIfAborted();
        const vectors = await provider.embedPassages(page.map((chunk) => chunk.content));
        const seqs = page.map((chunk) => chunk.seq);
        const written = await this.repository.setNextVectors(lock, seqs, vectors, model);
        if (written !== 'written') throw ReembedErrors.stopped(datasetId, written);
        done += page.length;
        onProgress(done);
        after = seqs[seqs.length - 1];
      }
      const outcome = await this.repository.switchGeneration(lock, model);
      if (outcome === 'switched') break;
      if (outcome !== 'incomplete') throw ReembedErrors.stopped(datasetId, outcome);
    }
    // An index of the dataset's own at the old dimension indexes no vector now; a worker builds the
    // new dimension's at its next look at the dataset (a document indexed, or its start).
    await this.vectorIndexes.dropStale(seq);
    return { dataset_id: datasetId, chunks: done, model: provider.model, dimensions: provider.dimensions };
  }
}
