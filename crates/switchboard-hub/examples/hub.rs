//! Every MCP server the user has configured — in switchboard's file or any
//! other client's (Claude Code, Claude Desktop, VS Code, Cursor, Codex,
//! Gemini CLI, goose) — connected at once, their tools listed under one
//! namespace, and one of them called.
//!
//! ```sh
//! cargo run -p switchboard-hub --example hub                        # list
//! cargo run -p switchboard-hub --example hub -- server__tool '{"a": 1}'   # and call
//! ```
//!
//! Servers from a project's files run only once approved
//! (`switchboard approve`), as in the CLI; `${VAR}` references are expanded.

use switchboard_hub::Hub;
use switchboard_hub::config::{LoadOptions, Locations, load};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let locations = Locations::from_process()?;
    let loaded = load(&locations, &LoadOptions::new());
    let mut expander = loaded.expander(&locations);
    let mut servers = Vec::new();
    for server in &loaded.servers {
        // Disabled and unapproved servers are listed by the hub, never started.
        if !server.enabled || !server.trust.allows_start() {
            servers.push(server.clone());
            continue;
        }
        match expander.expand(server) {
            Ok(expanded) => servers.push(expanded.config),
            Err(error) => eprintln!("{}: {error}", server.name),
        }
    }
    let hub = Hub::builder().servers(servers).build()?;
    let report = hub.start().await?;
    println!(
        "{} ready, {} not, in {:?}",
        report.ready.len(),
        report.not_ready.len(),
        report.elapsed
    );
    for (name, state) in &report.not_ready {
        println!("  {name}: {state:?}");
    }
    for tool in hub.tools() {
        println!("{}  ({})", tool.name, tool.server);
    }
    let mut args = std::env::args().skip(1);
    if let Some(name) = args.next() {
        let arguments = args
            .next()
            .map(|json| serde_json::from_str(&json))
            .transpose()?;
        let result = hub.call_tool(&name, arguments).await?;
        println!("{:?}", result.content);
    }
    hub.shutdown().await;
    Ok(())
}
