#!/usr/bin/env bash
# Sets everything up (see scripts/setup.sh), then runs lint, the whole test suite on one PostgreSQL and
# one Redis, and the distributed pass on Citus and a Redis Cluster (scripts/test-cluster.sh).
# Extra arguments go to jest and run the first pass alone, e.g. scripts/test.sh test/datasets.e2e-spec.ts
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node.sh
bash scripts/setup.sh
# Random-weight ONNX models of real shape (see ../shared/models/README.md) for the local embedding tests.
bash ../shared/tools/synthetic-models/make.sh .cache/models >/dev/null
if [ $# -eq 0 ]; then
  # Citus is built and the clusters started while the first pass runs.
  mkdir -p .cache
  bash scripts/cluster.sh start >.cache/cluster-start.log 2>&1 &
  cluster_start=$!
fi
npm run --silent lint
npm test -- "$@"
if [ $# -eq 0 ]; then
  wait "$cluster_start" || { cat .cache/cluster-start.log; exit 1; }
  bash scripts/test-cluster.sh
fi
