#!/usr/bin/env bash
# Installs the independent MCP servers the interop tests talk to, into a
# project-local cache (never globally):
#
#   $SWITCHBOARD_CACHE/npm/node_modules/@modelcontextprotocol/server-everything
#
# SWITCHBOARD_CACHE defaults to <repo>/.cache (git-ignored). Idempotent: an
# install already at the pinned version is left alone. Without npm it prints
# why it did nothing and exits 0 (the interop tests then skip, unless
# SWITCHBOARD_REQUIRE_INTEROP=1).
#
# Run the server over stdio with:
#   node "$SWITCHBOARD_CACHE/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js" stdio
# (bin name `mcp-server-everything`; with no argument it also defaults to stdio).
#
# The rmcp 3.9 peer needs no install: it is the cargo bin
# `switchboard-rmcp-server` of crates/switchboard-testkit.
set -euo pipefail

EVERYTHING_PKG="@modelcontextprotocol/server-everything"
# Pinned; bump deliberately (check with `npm view $EVERYTHING_PKG version`).
EVERYTHING_VERSION="2026.8.31"

script_dir="${BASH_SOURCE[0]%/*}"
[ "$script_dir" != "${BASH_SOURCE[0]}" ] || script_dir=.
repo="$(cd "$script_dir/.." && pwd)"
cache="${SWITCHBOARD_CACHE:-$repo/.cache}"
prefix="$cache/npm"
pkg_dir="$prefix/node_modules/$EVERYTHING_PKG"
entry="$pkg_dir/dist/index.js"

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    echo "install-interop: npm/node not found; skipping $EVERYTHING_PKG (interop tests against it will be skipped)."
    echo "install-interop: install Node.js >= 18 with npm (e.g. apt-get install nodejs npm) and re-run."
    exit 0
fi

installed_version() {
    [ -f "$pkg_dir/package.json" ] || return 0
    node -e 'try { process.stdout.write(require(process.argv[1]).version || "") } catch (e) {}' \
        "$pkg_dir/package.json"
}

current="$(installed_version)"
if [ "$current" = "$EVERYTHING_VERSION" ] && [ -f "$entry" ]; then
    echo "install-interop: $EVERYTHING_PKG@$EVERYTHING_VERSION already installed"
else
    if [ -n "$current" ]; then
        echo "install-interop: replacing $EVERYTHING_PKG@$current with $EVERYTHING_VERSION"
    else
        echo "install-interop: installing $EVERYTHING_PKG@$EVERYTHING_VERSION into $prefix"
    fi
    mkdir -p "$prefix"
    # --prefix keeps everything under the cache; no package.json of the repo is
    # touched. --no-save would leave no lock; an exact spec pins the top level.
    npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
        "$EVERYTHING_PKG@$EVERYTHING_VERSION"
    current="$(installed_version)"
    if [ "$current" != "$EVERYTHING_VERSION" ] || [ ! -f "$entry" ]; then
        echo "install-interop: install finished but $entry (version $EVERYTHING_VERSION) is missing" >&2
        exit 1
    fi
fi

echo "install-interop: server-everything $EVERYTHING_VERSION at $pkg_dir"
echo "install-interop: run over stdio: $(command -v node) $entry stdio"
