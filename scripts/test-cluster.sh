#!/usr/bin/env bash
# The distributed pass: the end-to-end suites of datasets, documents, search, webhooks and the rate
# limit again, on a Citus coordinator with two workers and a three-master Redis Cluster, started on
# local ports by scripts/cluster.sh. Tests that rely on one PostgreSQL's own features (a trigger of
# the test's, a query the test runs across tables Citus cannot join) say so and are left to the first
# pass (test/utils/topology.ts). Extra arguments go to jest, e.g. a single spec file.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node.sh
bash scripts/cluster.sh start
export TEST_DATABASE_ADMIN_URL=postgres://postgres@127.0.0.1:5433/postgres
export TEST_CITUS_WORKERS=127.0.0.1:5434,127.0.0.1:5435
export REDIS_URL=redis://127.0.0.1:7001 TEST_REDIS_CLUSTER=true
# CI's set, about 2.5 min here (docs/testing.md). search, document-replace and webhook-delivery pass on
# the clusters too, in 3.5 min more: `scripts/test-cluster.sh test/search.e2e-spec.ts` and so on.
SUITES=(
  test/datasets.e2e-spec.ts
  test/documents.e2e-spec.ts
  test/search-datasets.e2e-spec.ts
  test/webhooks.e2e-spec.ts
  test/auth.e2e-spec.ts
  test/readme.e2e-spec.ts
  test/move-to-citus.e2e-spec.ts
)
npm test -- "${@:-${SUITES[@]}}"
