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

  @Column('timestamptz', { name: 'created_at' })
  createdAt!: Date;

  @Column('timestamptz', { name: 'updated_at' })
  updatedAt!: Date;
}
