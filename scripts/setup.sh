#!/usr/bin/env bash
# Prepares this machine to run or test the service; safe and fast to re-run.
#   - Node.js 24 first on PATH (scripts/node.sh)
#   - npm packages (skipped when package-lock.json has not changed since the last install)
#   - pgvector for the local PostgreSQL (scripts/install-pgvector.sh)
#   - Debian's chromium, which the browser test drives (never a browser download)
#   - curl and jq, which the README walkthrough uses (and its test runs)
#   - PostgreSQL and Redis started when they are local and down
#   - the database created when missing
#   - the TypeScript build (dist/), which also holds the compiled migrations
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/node.sh

DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/dataset_search}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379}
export DATABASE_URL REDIS_URL

log() { printf '[setup] %s\n' "$*"; }

install_npm_packages() {
  local stamp=node_modules/.lock-sha256 want
  # Installed again under another Node version, whose npm may resolve optional native packages otherwise.
  want="$(sha256sum package-lock.json | cut -d' ' -f1) node-$(node --version)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    log "npm packages up to date"
    return
  fi
  log "installing npm packages"
  # `npm install` with the committed lock, not `npm ci`: the registry here serves no metadata for other
  # platforms' optional native packages, so the lock lacks them and `npm ci` refuses it as out of sync.
  # onnxruntime-node's install step downloads GPU libraries; the CPU runtime ships inside the package.
  ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --loglevel=error
  echo "$want" >"$stamp"
}

# Debian's packages, with sudo unless root; the package lists are refreshed only when the install fails.
apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 ||
    { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null; }
}

install_chromium() {
  if command -v "${CHROMIUM_PATH:-chromium}" >/dev/null 2>&1; then return; fi
  if ! command -v apt-get >/dev/null 2>&1; then
    log "chromium is missing: install it, or set CHROMIUM_PATH, for the browser test"
    return
  fi
  log "installing chromium (Debian's package) for the browser test"
  apt_install chromium
}

install_walkthrough_tools() {
  local missing=() tool
  for tool in curl jq; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
  if [ "${#missing[@]}" -eq 0 ]; then return; fi
  if ! command -v apt-get >/dev/null 2>&1; then
    log "missing ${missing[*]}, which the README walkthrough and its test need"
    return
  fi
  log "installing ${missing[*]} (Debian's packages) for the README walkthrough and its test"
  apt_install "${missing[@]}"
}

is_local() { case "$1" in *://*@127.0.0.1*|*://127.0.0.1*|*://*@localhost*|*://localhost*) return 0 ;; *) return 1 ;; esac; }

start_postgres() {
  if pg_isready -q -d "$DATABASE_URL" 2>/dev/null; then return; fi
  is_local "$DATABASE_URL" || { log "PostgreSQL at DATABASE_URL is not reachable"; exit 1; }
  log "starting PostgreSQL"
  # The cluster pgvector is built for (scripts/install-pgvector.sh, PG_MAJOR).
  pg_ctlcluster --skip-systemctl-redirect "${PG_MAJOR:-15}" main start
  for _ in $(seq 1 50); do pg_isready -q -d "$DATABASE_URL" && return; sleep 0.2; done
  log "PostgreSQL did not come up"; exit 1
}

start_redis() {
  if redis-cli -u "$REDIS_URL" ping >/dev/null 2>&1; then return; fi
  is_local "$REDIS_URL" || { log "Redis at REDIS_URL is not reachable"; exit 1; }
  log "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  local port
  port=$(node -e 'process.stdout.write(new URL(process.argv[1]).port || "6379")' "$REDIS_URL")
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$port" --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 50); do redis-cli -u "$REDIS_URL" ping >/dev/null 2>&1 && return; sleep 0.2; done
  log "Redis did not come up"; exit 1
}

create_database() {
  local name admin
  name=$(node -e 'process.stdout.write(new URL(process.argv[1]).pathname.slice(1))' "$DATABASE_URL")
  admin=$(node -e 'const u = new URL(process.argv[1]); u.pathname = "/postgres"; process.stdout.write(u.href)' "$DATABASE_URL")
  if [ "$(psql "$admin" -tAc "SELECT 1 FROM pg_database WHERE datname = '$name'")" != "1" ]; then
    log "creating database $name"
    psql "$admin" -qc "CREATE DATABASE \"$name\""
  fi
}

install_npm_packages
if is_local "$DATABASE_URL"; then bash scripts/install-pgvector.sh; fi
install_chromium
install_walkthrough_tools
start_postgres
start_redis
create_database
log "building with Node.js $(node --version)"
npm run --silent build
log "ready"
