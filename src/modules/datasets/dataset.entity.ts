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

  @Column('timestamptz', { name: 'created_at' })
  createdAt!: Date;

  @Column('timestamptz', { name: 'updated_at' })
  updatedAt!: Date;
}
