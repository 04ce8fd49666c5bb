import { Column, Entity, PrimaryColumn } from 'typeorm';

export type Metadata = Record<string, unknown>;

@Entity('datasets')
export class DatasetEntity {
  @PrimaryColumn('text')
  id!: string;

  @Column('text', { name: 'account_id' })
  accountId!: string;

  @Column('text')
  name!: string;

  @Column('text', { nullable: true })
  description!: string | null;

  @Column('boolean', { name: 'is_public' })
  isPublic!: boolean;

  @Column('jsonb')
  metadata!: Metadata;

  @Column('integer', { name: 'document_count' })
  documentCount!: number;

  /** Internal compact key of the dataset in the chunk and postings tables. */
  @Column('bigint')
  seq!: string;

  /** PostgreSQL text search configuration for the keyword leg (stemming, stop words). */
  @Column('text')
  language!: string;

  @Column('text', { name: 'embedding_model', nullable: true })
  embeddingModel!: string | null;

  @Column('integer', { name: 'embedding_dimensions', nullable: true })
  embeddingDimensions!: number | null;

  /** The dimension of the dataset's own HNSW index, once built (docs/search.md, per-dataset indexes). */
  @Column('integer', { name: 'vector_index_dimensions', nullable: true })
  vectorIndexDimensions!: number | null;

  /** Being re-embedded: left out of vector search until every vector is of the new model. */
  @Column('boolean')
  reembedding!: boolean;

  /** BM25's N: chunks of the dataset (bigint, read as a string). */
  @Column('bigint', { name: 'chunk_count' })
  chunkCount!: string;

  @Column('timestamptz', { name: 'created_at' })
  createdAt!: Date;

  @Column('timestamptz', { name: 'updated_at' })
  updatedAt!: Date;
}
