/**
 * Runs one statement and resolves with its rows: on a connection of the caller's choosing, on its own
 * or inside the caller's transaction. Repositories whose reads must share a snapshot, or a deadline,
 * with others take one rather than reach for a pool.
 */
export type Read = <T>(text: string, values?: unknown[]) => Promise<T[]>;

/** Statements of their own on a pool or inside a transaction: anything with TypeORM's `query`. */
export function readOn(executor: { query<T>(text: string, values?: unknown[]): Promise<T> }): Read {
  return <T>(text: string, values?: unknown[]) => executor.query<T[]>(text, values);
}
