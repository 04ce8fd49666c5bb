/**
 * The distributed pass (scripts/test-cluster.sh) runs the suites on Citus, where a few tests cannot
 * run: they check one PostgreSQL's own behaviour (a trigger the test adds to hold a statement back,
 * counters of index scans read on the coordinator, an old migration run again on a table since
 * distributed). They run in the first pass, on one PostgreSQL; each says why it is left out here.
 */
export const ON_CITUS = Boolean(process.env.TEST_CITUS_WORKERS);

/** `it`, in the first pass only (see above). */
export const itOnOnePostgres: jest.It = ON_CITUS ? it.skip : it;
