#!/usr/bin/env bash
# Sets everything up (see scripts/setup.sh), then runs lint and the whole test suite.
# Extra arguments go to jest, e.g. scripts/test.sh test/datasets.e2e-spec.ts
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
npm run --silent lint
npm test -- "$@"
