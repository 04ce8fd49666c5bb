import { Injectable } from '@nestjs/common';
import { AppError } from 'src/common/errors/app-error.js';
import { DatasetErrors } from 'src/modules/datasets/datasets.errors.js';
import type { EmbeddingProvider } from 'src/modules/embeddings/embedding-provider.js';
import { EmbeddingService } from 'src/modules/embeddings/embedding.service.js';
import { ChunkVectorsRepository } from 'src/modules/chunk-index/chunk-vectors.repository.js';
import { DatasetVectorIndexRepository } from 'src/modules/chunk-index/dataset-vector-index.repository.js';
import { type ReembeddingLock, ReembedRepository } from 'src/modules/embeddings/reembed.repository.js';

const PAGE = 256;

/**
 * Embeds every chunk of a dataset again with the configured provider, and then records its model on
 * the dataset: the way to a new model, and from keyword-only to hybrid. Runs page by page. While it
 * runs, the dataset is marked `reembedding`: the vector leg leaves it out (so that it never ranks two
 * models' vectors together) and chunks indexed meanwhile get no vector; they are embedded once the
 * new model is recorded. Interrupted, the dataset stays keyword-only until the command runs again.
 * A dataset's own vector index of another dimension is dropped at the end.
 * One run at a time per dataset: another one started meanwhile is refused (`reembed_in_progress`),
 * and a run whose lock's session ended stops at its next write (`reembed_lock_lost`).
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
        if (outcome === 'lost') throw lockLost(datasetId);
        if (outcome === 'refused') return done;
        done += page.length;
        after = seqs[seqs.length - 1];
      }
    });
  }

  async reembed(datasetId: string, onProgress: (done: number) => void = () => undefined) {
    const provider = this.embedding.current();
    if (!provider) throw new AppError(400, 'embedding_unavailable', 'No embedding provider is configured');
    const seq = await this.repository.datasetSeq(datasetId);
    if (seq === null) throw DatasetErrors.notFound(datasetId);
    const result = await this.repository.withReembeddingLock(datasetId, (lock) =>
      this.run(lock, seq, provider, onProgress),
    );
    if (!result) {
      throw new AppError(409, 'reembed_in_progress', `Dataset "${datasetId}" is already being re-embedded`, {
        dataset_id: datasetId,
      });
    }
    return result;
  }

  private async run(
    lock: ReembeddingLock,
    seq: string,
    provider: EmbeddingProvider,
    onProgress: (done: number) => void,
  ) {
    const { datasetId } = lock;
    const stillHeld = (written: boolean) => {
      if (!written) throw lockLost(datasetId);
    };
    stillHeld(await this.repository.startReembedding(lock));
    let done = 0;
    const embedPage = async (page: { seq: string; content: string }[]) => {
      const vectors = await provider.embedPassages(page.map((chunk) => chunk.content));
      stillHeld(
        await this.repository.setEmbeddings(
          lock,
          page.map((chunk) => chunk.seq),
          vectors,
        ),
      );
      done += page.length;
      onProgress(done);
    };
    for (let after = '0'; ;) {
      const page = await this.chunkVectors.chunkPage(seq, after, PAGE);
      if (page.length === 0) break;
      await embedPage(page);
      after = page[page.length - 1].seq;
    }
    // Back into vector search under the new model. Documents indexed while the pages were read got no
    // vectors; their transactions held the dataset's chunk lock, which finishReembedding waits for.
    stillHeld(await this.repository.finishReembedding(lock, provider.model, provider.dimensions));
    for (;;) {
      const page = await this.chunkVectors.chunksWithoutVector(seq, PAGE);
      if (page.length === 0) break;
      await embedPage(page);
    }
    // An index of the dataset's own at the old dimension indexes no vector now; a worker builds the
    // new dimension's at its next look at the dataset (a document indexed, or its start).
    await this.vectorIndexes.dropStale(seq);
    return { dataset_id: datasetId, chunks: done, model: provider.model, dimensions: provider.dimensions };
  }
}

function lockLost(datasetId: string): AppError {
  return new AppError(
    409,
    'reembed_lock_lost',
    `The re-embedding of dataset "${datasetId}" lost its lock (its database session ended) and wrote nothing more; run it again`,
    { dataset_id: datasetId },
  );
}
