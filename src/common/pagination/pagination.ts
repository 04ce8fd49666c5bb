import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, Max, Min } from 'class-validator';

export const PAGE_SIZE = { default: 20, max: 100 } as const;

/**
 * A query-string integer: decimal digits only, so that `0x10`, `1e1` or ` 3 ` stay strings and fail
 * `IsInt`, where `Number()` would have read them as numbers.
 */
export const QueryInt = () =>
  Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^-?\d{1,15}$/.test(value) ? Number(value) : value,
  );

/** `limit` and `offset` of every list endpoint. */
export class PageQueryDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: PAGE_SIZE.max,
    default: PAGE_SIZE.default,
    description: 'Items per page',
  })
  @QueryInt()
  @Max(PAGE_SIZE.max, { message: `must be from 1 to ${PAGE_SIZE.max}` })
  @Min(1, { message: `must be from 1 to ${PAGE_SIZE.max}` })
  @IsInt({ message: 'must be an integer' })
  limit: number = PAGE_SIZE.default;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: 2_147_483_647,
    default: 0,
    description: 'Items to skip',
  })
  @QueryInt()
  @Max(2_147_483_647, { message: 'is too large' })
  @Min(0, { message: 'must be 0 or more' })
  @IsInt({ message: 'must be an integer' })
  offset: number = 0;
}

export interface Page<T> {
  items: T[];
  total: number;
}

/** The contract's list envelope: the items under a resource-named key, plus paging facts. */
export function listEnvelope<K extends string, T>(key: K, page: Page<T>, query: PageQueryDto) {
  return {
    [key]: page.items,
    total: page.total,
    limit: query.limit,
    offset: query.offset,
    has_more: query.offset + page.items.length < page.total,
  } as Record<K, T[]> & { total: number; limit: number; offset: number; has_more: boolean };
}

/** The paging facts of every list response; each list adds its items under a resource-named key. */
export class PageEnvelopeDto {
  @ApiProperty({ type: 'integer', example: 1 })
  total!: number;

  @ApiProperty({ type: 'integer', example: 20 })
  limit!: number;

  @ApiProperty({ type: 'integer', example: 0 })
  offset!: number;

  @ApiProperty({ example: false })
  has_more!: boolean;
}
