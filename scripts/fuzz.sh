#!/usr/bin/env bash
# Runs every cargo fuzz target in fuzz/ for SECONDS seconds each (default 30),
# one after the other, or only the TARGETs named.
#
#   scripts/fuzz.sh [SECONDS] [TARGET…]
#
# Needs Rust nightly (`rustup toolchain install nightly`); installs cargo-fuzz
# when it is missing. Each target starts from fuzz/corpus/<target>/ (the
# committed seed-* files plus whatever earlier runs found, which git ignores)
# and first replays fuzz/regressions/<target>/, if any. Builds into
# $CARGO_TARGET_DIR when set, else fuzz/target. Exits 1 if any target
# crashed, after printing the input that did it (fuzz/artifacts/<target>/…)
# and how to replay and minimise it. FUZZ_SEED=N makes the runs repeat
# (libFuzzer's -seed; 0, the default, is a new seed each time): CI uses 1.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-30}"
shift || true
case "$seconds" in
'' | *[!0-9]*)
    echo "fuzz: SECONDS must be a whole number, not '$seconds'" >&2
    exit 2
    ;;
esac

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz: Rust nightly is needed (rustup toolchain install nightly)" >&2
    exit 1
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    cargo install --locked cargo-fuzz
fi

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(pwd)/fuzz/target}"
cd fuzz
if [ "$#" -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

echo "fuzz: building ${targets[*]}"
cargo +nightly fuzz build

failed=()
summary=()
for target in "${targets[@]}"; do
    corpus="corpus/$target"
    artifacts="artifacts/$target"
    mkdir -p "$corpus" "$artifacts"
    inputs=("$corpus")
    if [ -d "regressions/$target" ]; then
        inputs+=("regressions/$target")
    fi
    echo "== fuzz $target (${seconds}s)"
    # cargo fuzz writes crashes to fuzz/artifacts/<target>/, named by hash:
    # compare listings to find this run's.
    before="$(ls "$artifacts")"
    status=0
    log="$(mktemp)"
    cargo +nightly fuzz run "$target" "${inputs[@]}" -- \
        -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -seed="${FUZZ_SEED:-0}" \
        -print_final_stats=1 2>&1 | tee "$log" || status=${PIPESTATUS[0]}
    if [ "$status" -eq 0 ]; then
        rm -f "$log"
        continue
    fi
    failed+=("$target")
    # What the target said when it failed (the panic, libFuzzer's reason),
    # kept for the summary at the end: a CI log is often read from its tail.
    why="$({
        grep -A1 -m1 "panicked at" "$log"
        grep -E -m4 "ERROR: libFuzzer|SUMMARY: libFuzzer|==[0-9]+== ?ERROR" "$log"
    } || true)"
    rm -f "$log"
    new="$(comm -13 <(echo "$before") <(ls "$artifacts"))"
    if [ -z "$new" ]; then
        # No input to blame: the fuzzer itself ended badly (killed, out of
        # memory before libFuzzer noticed, a build failure).
        summary+=("$target exited with status $status and left no input in fuzz/$artifacts")
    fi
    for name in $new; do
        summary+=("$target crashed on fuzz/$artifacts/$name"
            "  replay:   (cd fuzz && cargo +nightly fuzz run $target $artifacts/$name)"
            "  minimise: (cd fuzz && cargo +nightly fuzz tmin $target $artifacts/$name)"
            "  input (base64): $(base64 -w0 "$artifacts/$name" | head -c 4000)")
    done
    while IFS= read -r line; do
        [ -n "$line" ] && summary+=("  $line")
    done <<<"$why"
done

if [ "${#failed[@]}" -gt 0 ]; then
    printf 'fuzz: %s\n' "${summary[@]}" >&2
    echo "fuzz: crashed: ${failed[*]}" >&2
    exit 1
fi
echo "fuzz: ${#targets[@]} targets ran ${seconds}s each without a crash"
