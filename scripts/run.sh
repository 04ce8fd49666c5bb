#!/usr/bin/env bash
# Sets everything up (see scripts/setup.sh), then starts the service in the foreground.
# Migrations run at boot. Configuration comes from the environment (see README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node.sh
bash scripts/setup.sh
exec node dist/main.js
