import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import type { Page } from 'src/common/pagination/pagination.js';

/** One page of a query's rows in the given order, with the total number of rows. */
export async function pagedQuery<T extends ObjectLiteral>(
  query: SelectQueryBuilder<T>,
  order: Record<string, 'ASC' | 'DESC'>,
  limit: number,
  offset: number,
): Promise<Page<T>> {
  const [items, total] = await Promise.all([
    query.clone().orderBy(order).limit(limit).offset(offset).getMany(),
    query.getCount(),
  ]);
  return { items, total };
}
