import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class CheckDto {
  @ApiProperty({ enum: ['ok', 'error'], example: 'ok' })
  status!: 'ok' | 'error';
}

export class ChecksDto {
  @ApiProperty({ type: CheckDto })
  postgres!: CheckDto;

  @ApiProperty({ type: CheckDto })
  redis!: CheckDto;
}

/** How searches run on this service: with vectors (`hybrid`) or BM25 alone. */
export class SearchModeDto {
  @ApiProperty({ enum: ['hybrid', 'keyword_only'], example: 'hybrid' })
  mode!: 'hybrid' | 'keyword_only';

  @ApiProperty({ enum: ['local', 'openai'], nullable: true, example: 'local' })
  provider!: 'local' | 'openai' | null;

  @ApiProperty({ type: String, nullable: true, example: 'Xenova/bge-small-en-v1.5' })
  model!: string | null;

  @ApiProperty({ type: 'integer', nullable: true, example: 384 })
  dimensions!: number | null;

  @ApiPropertyOptional({ description: 'Why searches are keyword-only, when they are' })
  reason?: string;
}

export class ReadinessDto {
  @ApiProperty({ enum: ['ready'], example: 'ready' })
  status!: 'ready';

  @ApiProperty({ type: ChecksDto })
  checks!: ChecksDto;

  @ApiProperty({ type: SearchModeDto })
  search!: SearchModeDto;
}

export class NotReadyDetailsDto {
  @ApiProperty({ type: ChecksDto, example: { postgres: { status: 'ok' }, redis: { status: 'error' } } })
  checks!: ChecksDto;

  @ApiProperty({ type: SearchModeDto })
  search!: SearchModeDto;
}

/** The contract's error body, with what /ready found. */
export class NotReadyDto {
  @ApiProperty({ example: 'Not ready' })
  error!: string;

  @ApiProperty({ enum: ['not_ready'], example: 'not_ready' })
  code!: 'not_ready';

  @ApiProperty({ type: NotReadyDetailsDto })
  details!: NotReadyDetailsDto;
}
