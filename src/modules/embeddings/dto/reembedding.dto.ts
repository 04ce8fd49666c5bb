import { ApiProperty } from '@nestjs/swagger';
import type { ReembeddingStatus } from 'src/modules/embeddings/reembed.service.js';

/** A dataset's re-embedding: the generation of vectors being built beside the searched one, and how far. */
export class ReembeddingResponseDto implements ReembeddingStatus {
  @ApiProperty({ example: 'ds_4Jq0Zt6mYwQ1bR8sVx3nLp' })
  dataset_id!: string;

  @ApiProperty({
    enum: ['building', 'none'],
    description:
      '`building`: the new model’s vectors are being written beside the old, which searches use until all are ' +
      'written and the dataset switches at once; `none`: no re-embedding (finished, cancelled, or never asked)',
    example: 'building',
  })
  status!: 'building' | 'none';

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The model searches use meanwhile (null: the dataset had no vectors)',
    example: 'minishlab/potion-base-8M',
  })
  from_model!: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The model being built',
    example: 'Xenova/bge-small-en-v1.5',
  })
  model!: string | null;

  @ApiProperty({ type: 'integer', nullable: true, example: 384 })
  dimensions!: number | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-12-02T08:30:00.000Z' })
  requested_at!: string | null;

  @ApiProperty({ type: 'integer', description: 'The dataset’s chunks', example: 5183 })
  chunks_total!: number;

  @ApiProperty({
    type: 'integer',
    description: 'Chunks with a vector of the new model so far',
    example: 2048,
  })
  chunks_embedded!: number;
}
