#!/usr/bin/env bash
# A local Citus cluster and Redis Cluster for the distributed test pass: safe and fast to re-run.
#   scripts/cluster.sh start    build Citus when missing, create what is missing, start what is down
#   scripts/cluster.sh stop     stop the three PostgreSQL clusters and the three Redis nodes
#   scripts/cluster.sh status   what runs, the Citus nodes, the Redis Cluster's state
#   scripts/cluster.sh spare    also a fourth PostgreSQL cluster, citus-w3 on 5436, a node of no database:
#                               the worker bench:rebalance adds to a loaded cluster
#
# Citus: three clusters of the local PostgreSQL (pg_createcluster): the coordinator on 5433, workers on
# 5434 and 5435, each with shared_preload_libraries = 'citus', trust on 127.0.0.1, and a database
# (CITUS_DB, default dataset_search) holding the extensions citus and vector; the workers are nodes of
# the coordinator. The service's DATABASE_URL is then postgres://postgres@127.0.0.1:5433/dataset_search.
# Redis Cluster: three masters on 7001-7003 (Debian's redis-server), no replicas, nothing saved but the
# nodes.conf of each, under CLUSTER_DIR (default .cache/cluster). REDIS_URL: redis://127.0.0.1:7001.
# The main PostgreSQL (5432) and Redis (6379) are left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_MAJOR=${PG_MAJOR:-15}
CITUS_DB=${CITUS_DB:-dataset_search}
CLUSTER_DIR=${CLUSTER_DIR:-$PWD/.cache/cluster}
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
# name:port, the coordinator first.
PG_NODES=(citus-coord:5433 citus-w1:5434 citus-w2:5435)
SPARE_NODE=citus-w3:5436
REDIS_PORTS=(7001 7002 7003)
HOST=127.0.0.1

log() { printf '[cluster] %s\n' "$*"; }
sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_=sudo
psql_at() { local port=$1 db=$2; shift 2; psql -X -q -v ON_ERROR_STOP=1 -h "$HOST" -p "$port" -U postgres -d "$db" "$@"; }
pg_up() { "$PG_BIN/pg_isready" -q -h "$HOST" -p "$1"; }

install_extensions() {
  bash ../shared/tools/citus/install.sh
  bash scripts/install-pgvector.sh
}

extensions_installed() {
  [ -f "/usr/lib/postgresql/$PG_MAJOR/lib/citus.so" ] && [ -f "/usr/lib/postgresql/$PG_MAJOR/lib/vector.so" ] &&
    [ "$(cat "/usr/lib/postgresql/$PG_MAJOR/lib/citus.version" 2>/dev/null)" = 13.2.2 ]
}

create_pg_cluster() {
  local name=$1 port=$2 conf=/etc/postgresql/$PG_MAJOR/$1
  if [ ! -d "$conf" ]; then
    log "creating PostgreSQL cluster $PG_MAJOR/$name on port $port"
    $sudo_ pg_createcluster --start-conf=manual -p "$port" "$PG_MAJOR" "$name" -- \
      --auth-local=trust --auth-host=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  fi
  # Written every time, so that a cluster made by an earlier version of this script gets today's settings.
  $sudo_ mkdir -p "$conf/conf.d"
  $sudo_ tee "$conf/conf.d/citus.conf" >/dev/null <<CONF
listen_addresses = '$HOST'
shared_preload_libraries = 'citus'
# Logical replication is what citus_rebalance_start moves shards with, writes going on.
wal_level = logical
max_connections = 200
shared_buffers = 256MB
CONF
  $sudo_ tee "$conf/pg_hba.conf" >/dev/null <<HBA
local all all trust
host  all all $HOST/32 trust
host  all all ::1/128 trust
HBA
}

start_pg_cluster() {
  local name=$1 port=$2
  pg_up "$port" && return
  log "starting PostgreSQL $PG_MAJOR/$name"
  $sudo_ pg_ctlcluster --skip-systemctl-redirect "$PG_MAJOR" "$name" start
  for _ in $(seq 1 100); do pg_up "$port" && return; sleep 0.1; done
  log "PostgreSQL $name did not come up on $port"; exit 1
}

prepare_database() {
  local port=$1
  if [ "$(psql_at "$port" postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$CITUS_DB'")" != 1 ]; then
    psql_at "$port" postgres -c "CREATE DATABASE \"$CITUS_DB\" ENCODING 'UTF8' TEMPLATE template0"
  fi
  # Only when missing: a worker refuses DDL once it is a node of the coordinator (its metadata is synced).
  local ext
  for ext in citus vector; do
    if [ "$(psql_at "$port" "$CITUS_DB" -tAc "SELECT 1 FROM pg_extension WHERE extname = '$ext'")" != 1 ]; then
      psql_at "$port" "$CITUS_DB" -c "CREATE EXTENSION $ext"
    fi
  done
}

add_workers() {
  local coord_port=${PG_NODES[0]#*:} entry port
  psql_at "$coord_port" "$CITUS_DB" -tAc \
    "SELECT citus_set_coordinator_host('$HOST', $coord_port) WHERE NOT EXISTS (SELECT FROM pg_dist_node WHERE groupid = 0)" >/dev/null
  for entry in "${PG_NODES[@]:1}"; do
    port=${entry#*:}
    psql_at "$coord_port" "$CITUS_DB" -tAc \
      "SELECT citus_add_node('$HOST', $port) WHERE NOT EXISTS (SELECT FROM pg_dist_node WHERE nodename = '$HOST' AND nodeport = $port)" >/dev/null
  done
}

redis_up() { redis-cli -h "$HOST" -p "$1" ping >/dev/null 2>&1; }
cluster_info() { redis-cli -h "$HOST" -p "$1" cluster info 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"; }

start_redis_node() {
  local port=$1 dir=$CLUSTER_DIR/redis/$1
  redis_up "$port" && return
  mkdir -p "$dir"
  log "starting Redis Cluster node on $port"
  redis-server --daemonize yes --bind "$HOST" --port "$port" --cluster-enabled yes \
    --cluster-config-file "$dir/nodes.conf" --cluster-node-timeout 5000 --save "" --appendonly no \
    --dir "$dir" --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
  for _ in $(seq 1 50); do redis_up "$port" && return; sleep 0.1; done
  log "Redis did not come up on $port"; exit 1
}

create_redis_cluster() {
  local port
  [ "$(cluster_info "${REDIS_PORTS[0]}" cluster_state)" = ok ] && return
  if [ "$(cluster_info "${REDIS_PORTS[0]}" cluster_known_nodes)" = 1 ]; then
    log "creating the Redis Cluster"
    redis-cli --cluster create $(for port in "${REDIS_PORTS[@]}"; do printf '%s:%s ' "$HOST" "$port"; done) \
      --cluster-replicas 0 --cluster-yes >/dev/null
  fi
  for _ in $(seq 1 100); do
    [ "$(cluster_info "${REDIS_PORTS[0]}" cluster_state)" = ok ] && return
    sleep 0.1
  done
  log "the Redis Cluster is not ok: $(redis-cli -h "$HOST" -p "${REDIS_PORTS[0]}" cluster info | head -1)"; exit 1
}

start() {
  extensions_installed || install_extensions
  local entry
  for entry in "${PG_NODES[@]}"; do
    create_pg_cluster "${entry%%:*}" "${entry#*:}"
    start_pg_cluster "${entry%%:*}" "${entry#*:}"
  done
  for entry in "${PG_NODES[@]}"; do prepare_database "${entry#*:}"; done
  add_workers
  local port
  for port in "${REDIS_PORTS[@]}"; do start_redis_node "$port"; done
  create_redis_cluster
  log "ready: DATABASE_URL=postgres://postgres@$HOST:${PG_NODES[0]#*:}/$CITUS_DB REDIS_URL=redis://$HOST:${REDIS_PORTS[0]}"
}

spare() {
  extensions_installed || install_extensions
  create_pg_cluster "${SPARE_NODE%%:*}" "${SPARE_NODE#*:}"
  start_pg_cluster "${SPARE_NODE%%:*}" "${SPARE_NODE#*:}"
  log "spare worker up on $HOST:${SPARE_NODE#*:}"
}

stop() {
  local entry port
  for entry in "${PG_NODES[@]}" "$SPARE_NODE"; do
    if pg_up "${entry#*:}"; then
      log "stopping PostgreSQL $PG_MAJOR/${entry%%:*}"
      $sudo_ pg_ctlcluster --skip-systemctl-redirect "$PG_MAJOR" "${entry%%:*}" stop -m fast
    fi
  done
  for port in "${REDIS_PORTS[@]}"; do
    if redis_up "$port"; then
      log "stopping Redis on $port"
      redis-cli -h "$HOST" -p "$port" shutdown nosave >/dev/null 2>&1 || true
    fi
  done
}

status() {
  local entry port rc=0
  for entry in "${PG_NODES[@]}"; do
    if pg_up "${entry#*:}"; then log "PostgreSQL ${entry%%:*} on ${entry#*:}: up"; else log "PostgreSQL ${entry%%:*} on ${entry#*:}: down"; rc=1; fi
  done
  if pg_up "${PG_NODES[0]#*:}"; then
    psql_at "${PG_NODES[0]#*:}" "$CITUS_DB" -c \
      "SELECT nodeid, nodename, nodeport, groupid, noderole, isactive FROM pg_dist_node ORDER BY nodeid" || rc=1
  fi
  for port in "${REDIS_PORTS[@]}"; do
    if redis_up "$port"; then log "Redis on $port: up, cluster_state $(cluster_info "$port" cluster_state)"; else log "Redis on $port: down"; rc=1; fi
  done
  return $rc
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  spare) spare ;;
  *) echo "usage: $0 start|stop|status|spare" >&2; exit 2 ;;
esac
