import type pg from 'pg';

/**
 * The distributed pass (scripts/test-cluster.sh) runs the suites on Citus, where a few tests cannot
 * run: they check one PostgreSQL's own behaviour (a trigger the test adds to hold a statement back,
 * counters of index scans read on the coordinator, an old migration run again on a table since
 * distributed). They run in the first pass, on one PostgreSQL; each says why it is left out here.
 */
export const ON_CITUS = Boolean(process.env.TEST_CITUS_WORKERS);

/** `it`, in the first pass only (see above). */
export const itOnOnePostgres: jest.It = ON_CITUS ? it.skip : it;

/**
 * Where the rows of a dataset's `table` are read: on one PostgreSQL, the table in the spec's database;
 * on Citus, the dataset's shard of it, in the same database on the worker that holds the shard. A test
 * that holds the rows locked there holds back what the service runs on them, wherever that is.
 */
export async function placementOf(
  sql: pg.Pool,
  databaseUrl: string,
  table: string,
  datasetSeq: string,
): Promise<{ url: string; table: string }> {
  if (!ON_CITUS) return { url: databaseUrl, table };
  const {
    rows: [shard],
  } = await sql.query<{ shard: string; host: string; port: number }>(
    `SELECT s.shardid::text AS shard, s.nodename AS host, s.nodeport AS port FROM citus_shards s
      WHERE s.shardid = get_shard_id_for_distribution_column($1, $2::bigint)`,
    [table, datasetSeq],
  );
  const url = new URL(databaseUrl);
  url.host = `${shard.host}:${shard.port}`;
  return { url: url.toString(), table: `${table}_${shard.shard}` };
}

/** `describe`, in the distributed pass only: what it checks needs Citus. */
export const describeOnCitus: jest.Describe = ON_CITUS ? describe : describe.skip;
