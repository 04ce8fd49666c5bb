import { Injectable } from '@nestjs/common';
import { AppError } from 'src/common/errors/app-error.js';
import { EmbeddingService } from 'src/modules/ingestion/embedding/embedding.service.js';
import { IngestionRepository } from 'src/modules/ingestion/ingestion.repository.js';

const PAGE = 256;

/**
 * Embeds every chunk of a dataset again with the configured provider, and records its model on the
 * dataset: the way to a new model, and from keyword-only to hybrid. Runs page by page, so it can be
 * interrupted and started again; until it finishes, the dataset's vectors are a mix of both models.
 */
@Injectable()
export class ReembedService {
  constructor(
    private readonly repository: IngestionRepository,
    private readonly embedding: EmbeddingService,
  ) {}

  async reembed(datasetId: string, onProgress: (done: number) => void = () => undefined) {
    const provider = this.embedding.current();
    if (!provider) throw new AppError(400, 'embedding_unavailable', 'No embedding provider is configured');
    const seq = await this.repository.datasetSeq(datasetId);
    if (seq === null)
      throw new AppError(404, 'dataset_not_found', `Dataset ${datasetId} not found`, {
        dataset_id: datasetId,
      });
    // Recorded first: chunks indexed from now on use this model too.
    await this.repository.setDatasetEmbeddingModel(datasetId, provider.model, provider.dimensions);
    let after = '0';
    let done = 0;
    for (;;) {
      const page = await this.repository.chunkPage(seq, after, PAGE);
      if (page.length === 0) break;
      const vectors = await provider.embedPassages(page.map((chunk) => chunk.content));
      await this.repository.setEmbeddings(
        page.map((chunk) => chunk.seq),
        vectors,
      );
      done += page.length;
      after = page[page.length - 1].seq;
      onProgress(done);
    }
    return { dataset_id: datasetId, chunks: done, model: provider.model, dimensions: provider.dimensions };
  }
}
