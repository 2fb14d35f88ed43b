//! `switchboard-testserver`: a configurable MCP server over stdio for
//! testing MCP clients. Run with `--help` for the flags.

fn main() {
    switchboard_testserver::run_stdio_main(std::env::args().skip(1).collect())
}
