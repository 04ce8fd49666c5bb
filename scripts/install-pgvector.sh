#!/usr/bin/env bash
# Builds and installs pgvector for the local PostgreSQL from Debian's own source package.
# pgvector is not packaged for bookworm, so we take trixie's source package and build it against
# postgresql-server-dev-<major>. Safe to re-run: it exits at once when the installed extension is
# already at least the wanted version.
set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}
MIN_VERSION=${PGVECTOR_MIN_VERSION:-0.8.0}

SRC_LIST=/etc/apt/sources.list.d/pgvector-trixie-src.sources
BUILD_DIR=${PGVECTOR_BUILD_DIR:-/var/cache/pgvector-build}

installed_version() {
  local control="/usr/share/postgresql/$PG_MAJOR/extension/vector.control"
  [ -f "$control" ] || return 1
  sed -n "s/^default_version = '\(.*\)'/\1/p" "$control"
}

version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

if v=$(installed_version) && [ -n "$v" ] && version_ge "$v" "$MIN_VERSION" \
   && [ -f "/usr/lib/postgresql/$PG_MAJOR/lib/vector.so" ]; then
  echo "pgvector $v already installed for PostgreSQL $PG_MAJOR"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

if [ ! -f "$SRC_LIST" ]; then
  $SUDO tee "$SRC_LIST" >/dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  dpkg-dev build-essential "postgresql-server-dev-$PG_MAJOR" >/dev/null

$SUDO rm -rf "$BUILD_DIR"
$SUDO mkdir -p "$BUILD_DIR"
cd "$BUILD_DIR"
# Only the upstream source is needed; Debian's build rules target trixie's PostgreSQL versions.
$SUDO apt-get source -qq --download-only pgvector >/dev/null 2>&1
$SUDO dpkg-source -x --skip-patches ./pgvector_*.dsc src >/dev/null 2>&1
cd src
$SUDO make -s PG_CONFIG="/usr/lib/postgresql/$PG_MAJOR/bin/pg_config" >/dev/null
$SUDO make -s PG_CONFIG="/usr/lib/postgresql/$PG_MAJOR/bin/pg_config" install >/dev/null
echo "pgvector $(installed_version) installed for PostgreSQL $PG_MAJOR"
