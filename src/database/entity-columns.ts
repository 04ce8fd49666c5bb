import type { DataSource, EntityTarget, ObjectLiteral } from 'typeorm';

/**
 * `alias.column AS "property", ...` for every column of an entity, from its TypeORM metadata: a raw
 * query selecting this list returns rows shaped like the entity (pg already gives bigint as string,
 * timestamptz as Date, jsonb parsed), without the query builder's CPU cost on a hot path.
 */
export function entityColumns<T extends ObjectLiteral>(
  db: DataSource,
  entity: EntityTarget<T>,
  alias: string,
): string {
  return db
    .getMetadata(entity)
    .columns.map((column) => `${alias}.${column.databaseName} AS "${column.propertyName}"`)
    .join(', ');
}
