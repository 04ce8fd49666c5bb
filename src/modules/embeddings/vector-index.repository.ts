import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** The vector indexes of the chunks' embeddings, one per dimension (see EmbeddingService). */
@Injectable()
export class VectorIndexRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Each embedding dimension in use gets a partial HNSW index over the cast `embedding::halfvec(dims)`
   * (the column itself has no fixed dimension; half precision halves the index and takes up to 4,000
   * dimensions). 384 is created by the migrations; others at start-up.
   */
  async ensureVectorIndex(dimensions: number): Promise<void> {
    if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 4000) return;
    await this.db.query(
      `CREATE INDEX IF NOT EXISTS chunks_embedding_${dimensions}_idx ON chunks
         USING hnsw ((embedding::halfvec(${dimensions})) halfvec_cosine_ops)
         WHERE vector_dims(embedding) = ${dimensions}`,
    );
  }
}
