//! `switchboard-testserver`: a configurable MCP server over stdio for tests,
//! benchmarks and demos. Run with `--help` for the flags.

fn main() {
    switchboard_testkit::run_stdio_main(std::env::args().skip(1).collect())
}
