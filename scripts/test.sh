#!/usr/bin/env bash
# Sets everything up (see scripts/setup.sh), then runs lint and the whole test suite.
# Extra arguments go to jest, e.g. scripts/test.sh test/datasets.e2e-spec.ts
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node.sh
bash scripts/setup.sh
# Random-weight ONNX models of real shape (see ../shared/models/README.md) for the local embedding tests.
bash ../shared/tools/synthetic-models/make.sh .cache/models >/dev/null
npm run --silent lint
npm test -- "$@"
