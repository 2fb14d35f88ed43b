//! `switchboard-testkit-server`: switchboard-testserver over stdio, or over
//! HTTP with `--http ADDR` (and its authorization server with `--auth`), for
//! tests and benchmarks. Run with `--help` for the flags.

fn main() {
    switchboard_testkit::run_stdio_main(std::env::args().skip(1).collect())
}
