#!/usr/bin/env bash
# Every performance figure of docs/PERFORMANCE.md, printed as Markdown:
# the hot-path benchmark (both servers, the targets, the memory figures), the
# CLI's size as `cargo install` builds it and its start-up time against a
# hello-world binary built with the same settings.
#
#   scripts/bench.sh                  # full: 5 rounds (~15 min on 2 cores)
#   scripts/bench.sh --quick          # 1 short round (~3 min)
#   scripts/bench.sh --quick --only fast-raw,fast-sb   # any hotpath option
#   BENCH_SKIP_HOTPATH=1 scripts/bench.sh              # size and start-up only
#   scripts/bench.sh gateway [--quick|--rounds N|--only nginx,sb-http]
#                     # only the gateway against nginx and the bridges (needs
#                     # nginx; installs supergateway, mcp-remote, mcp-proxy
#                     # into ~/.cache/switchboard-ci/bridges on first use)
#   scripts/bench.sh cli [--quick|--runs N|--rounds N|--only up,list]
#                     # only whole `switchboard` processes: call, tools, read,
#                     # prompt, list with `up` against the CLI's start and a
#                     # minimal client; `list` of 8 servers without `up`
#                     # against their own start (servers from
#                     # scripts/install-interop.sh when installed). The CLI
#                     # is built with the release profile (`cargo install`'s);
#                     # BENCH_PROFILE=profiling for the same code with line
#                     # tables (for perf).
#
# Pin everything to CPUs with e.g. `taskset -c 0,1 scripts/bench.sh`.
# Needs cargo, rustc and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
runs="${BENCH_STARTUP_RUNS:-300}"

echo "## Run"
echo
echo "- $(date -u '+%Y-%m-%d %H:%M UTC'), commit \`$(git rev-parse --short HEAD)\`$(git diff --quiet || echo ' (with local changes)')"
echo "- machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r); $(rustc --version)"
echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

if [[ "${1:-}" == "gateway" ]]; then
  shift
  cargo bench -q -p switchboard-testkit --bench gateway -- "$@"
  echo
  echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi

if [[ "${1:-}" == "cli" ]]; then
  shift
  profile="${BENCH_PROFILE:-release}"
  cargo build -q --profile "$profile" --locked -p switchboard-cli --bin switchboard
  echo "- CLI: \`cargo build --profile $profile\` ($target/$profile/switchboard)"
  echo
  SWITCHBOARD_BIN="$target/$profile/switchboard" \
    cargo bench -q -p switchboard-testkit --bench cli -- "$@"
  echo
  echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi

if [[ -z "${BENCH_SKIP_HOTPATH:-}" ]]; then
  cargo bench -q -p switchboard-testkit --bench hotpath -- "$@"
  echo
fi

# The CLI as `cargo install --locked --path crates/switchboard-cli` builds it
# (the release profile, the CLI's default features).
cargo build -q --release --locked -p switchboard-cli --bin switchboard
cli="$target/release/switchboard"

# hello world with the release profile's settings that matter for size and
# start-up (opt-level 3, no debug info, symbols stripped).
hello_dir="$target/bench-hello"
mkdir -p "$hello_dir"
printf 'fn main() {\n    println!("hello, world");\n}\n' >"$hello_dir/hello.rs"
rustc --edition 2024 -C opt-level=3 -C debuginfo=0 -C strip=symbols \
  -o "$hello_dir/hello" "$hello_dir/hello.rs"

echo "### CLI size and start-up"
echo
python3 - "$cli" "$hello_dir/hello" "$runs" <<'EOF'
import os, statistics, sys, time

cli, hello, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
devnull = os.open(os.devnull, os.O_WRONLY)

def once(argv):
    t = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
    os.waitpid(pid, 0)
    return (time.perf_counter_ns() - t) / 1e6

cmds = {"cli": [cli, "--version"], "hello": [hello]}
for argv in cmds.values():  # warm the page cache
    for _ in range(20):
        once(argv)
samples = {k: [] for k in cmds}
for _ in range(runs):  # interleaved
    for k, argv in cmds.items():
        samples[k].append(once(argv))
med = {k: statistics.median(v) for k, v in samples.items()}
p10 = {k: sorted(v)[len(v) // 10] for k, v in samples.items()}
diff = med["cli"] - med["hello"]
size = os.path.getsize(cli)
print("| figure | value | target | verdict |")
print("|---|---|---|---|")
print(f"| CLI binary (`cargo install` build, release profile) | {size / 1e6:.1f} MB ({size:,} bytes) | ≤ 15 MB | {'PASS' if size <= 15e6 else 'MISS'} |")
print(f"| hello-world binary, same settings | {os.path.getsize(hello) / 1e6:.2f} MB | | |")
print(f"| `switchboard --version`, spawn to exit (median of {runs}; p10) | {med['cli']:.2f} ms; {p10['cli']:.2f} ms | | |")
print(f"| hello world, spawn to exit (median of {runs}; p10) | {med['hello']:.2f} ms; {p10['hello']:.2f} ms | | |")
print(f"| difference (start to `main` and `--version`'s work) | {diff:.2f} ms | ≤ 2 ms | {'PASS' if diff <= 2 else 'MISS'} |")
EOF
echo
echo "- load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
