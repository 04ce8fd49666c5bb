#!/usr/bin/env bash
# Copies a deployment's data from one PostgreSQL into a Citus database that the service has migrated,
# empty, then checks that every table holds as many rows in both (docs/deployment.md, Moving a live
# deployment from one PostgreSQL to Citus). The service's API and worker processes must be stopped:
# what they write during the copy is not copied.
#   scripts/move-to-citus.sh SOURCE_DATABASE_URL TARGET_DATABASE_URL
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 SOURCE_DATABASE_URL TARGET_DATABASE_URL" >&2
  exit 2
fi
source_url=$1 target_url=$2

log() { printf '[move] %s\n' "$*"; }
fail() { printf '[move] %s\n' "$*" >&2; exit 1; }
query() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }

[ "$(query "$target_url" "SELECT count(*) FROM pg_extension WHERE extname = 'citus'")" = 1 ] ||
  fail "the target database has no citus extension"
[ "$(query "$target_url" "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = 'chunks'::regclass")" = 1 ] ||
  fail "the target's chunks table is not distributed: migrate it with the service on Citus first"
migrations="SELECT string_agg(name, ',' ORDER BY name) FROM schema_migrations"
[ "$(query "$source_url" "$migrations")" = "$(query "$target_url" "$migrations")" ] ||
  fail "the two databases are not at the same migrations: migrate both with the same version"
[ "$(query "$target_url" "SELECT count(*) FROM accounts")" = 0 ] || fail "the target database is not empty"

tables=$(query "$source_url" "SELECT string_agg(format('%I', tablename), ' ' ORDER BY tablename) FROM pg_tables
                               WHERE schemaname = 'public' AND tablename <> 'schema_migrations'")

# The data of every table but the migrations' own, with the sequences' values (setval), in the order
# of the foreign keys, in one transaction, so that a failure leaves the target as it was. The rows
# the migrations wrote (the Swagger UI's OAuth client) are in the copy too: they go first.
log "copying"
started=$SECONDS
{
  echo "SET client_min_messages = warning;"
  echo "TRUNCATE ${tables// /, } CASCADE;"
  pg_dump --data-only --no-owner --no-privileges --exclude-table-data=schema_migrations -d "$source_url"
} | psql -X -q -v ON_ERROR_STOP=1 --single-transaction -d "$target_url" >/dev/null
log "copied in $((SECONDS - started)) s"

# The planner's statistics of the shards, before the service plans a statement on them.
query "$target_url" "ANALYZE" >/dev/null

for table in $tables; do
  from=$(query "$source_url" "SELECT count(*) FROM $table")
  to=$(query "$target_url" "SELECT count(*) FROM $table")
  [ "$from" = "$to" ] || fail "$table: $from rows in the source, $to in the target"
done
log "every table holds as many rows in both: point DATABASE_URL at the target and start the service"
