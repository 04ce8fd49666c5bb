import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { ProcessingErrorPayload } from 'src/modules/events/domain-events.js';
import type { DocumentKind } from 'src/modules/documents/file-kinds.js';

export type DocumentStatus = 'processing' | 'ready' | 'failed';
export type ProcessingStage = 'upload' | 'extraction' | 'chunking' | 'embedding' | 'indexing';

export interface Progress {
  stage: ProcessingStage;
  percent: number;
}

@Entity('documents')
export class DocumentEntity {
  @PrimaryColumn('text')
  id!: string;

  @Column('text', { name: 'dataset_id' })
  datasetId!: string;

  /** The dataset's `seq`: the key a distributed database places the dataset's content by. */
  @Column('bigint', { name: 'dataset_seq' })
  datasetSeq!: string;

  @Column('text', { nullable: true })
  filename!: string | null;

  @Column('text')
  kind!: DocumentKind;

  @Column('text', { name: 'media_type' })
  mediaType!: string;

  @Column('integer', { name: 'size_bytes' })
  sizeBytes!: number;

  @Column('text')
  status!: DocumentStatus;

  @Column('jsonb')
  metadata!: Record<string, unknown>;

  /** The chunks the document has in the index (of the version searched), null while it has none. */
  @Column('integer', { name: 'chunks_created', nullable: true })
  chunksCreated!: number | null;

  /** Of the last run's chunks, those the model embedded; null for a run indexed keyword-only. */
  @Column('integer', { name: 'chunks_embedded', nullable: true })
  chunksEmbedded!: number | null;

  /** Of the last run's chunks, those that kept the vector of an unchanged chunk of the version replaced. */
  @Column('integer', { name: 'chunks_reused', nullable: true })
  chunksReused!: number | null;

  @Column('jsonb', { nullable: true })
  error!: ProcessingErrorPayload | null;

  @Column('jsonb', { nullable: true })
  progress!: Progress | null;

  /** Bumped by each reprocess, so that a job of an earlier run cannot write over a later one. */
  @Column('integer')
  generation!: number;

  /** Times the recovery sweep restarted this run after its worker died. */
  @Column('integer')
  recoveries!: number;

  @Column('integer', { name: 'processing_time_ms', nullable: true })
  processingTimeMs!: number | null;

  @Column('timestamptz', { name: 'created_at' })
  createdAt!: Date;

  @Column('timestamptz', { name: 'processing_started_at' })
  processingStartedAt!: Date;

  @Column('timestamptz', { name: 'heartbeat_at' })
  heartbeatAt!: Date;

  @Column('timestamptz', { name: 'processed_at', nullable: true })
  processedAt!: Date | null;
}

@Entity('document_sources')
export class DocumentSourceEntity {
  @PrimaryColumn('text', { name: 'document_id' })
  documentId!: string;

  @Column('bigint', { name: 'dataset_seq' })
  datasetSeq!: string;

  @Column('bytea')
  content!: Buffer;
}
