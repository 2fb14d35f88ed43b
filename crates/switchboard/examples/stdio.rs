//! Connect to any MCP server over stdio, list its tools and call one.
//!
//! ```sh
//! cargo run -p switchboard-mcp --example stdio -- npx -y @modelcontextprotocol/server-everything
//! cargo run -p switchboard-mcp --example stdio -- my-server --flag   # any command line
//! ```
//!
//! With the `everything` server it also calls `echo`; any other server's
//! tools are only listed.

use switchboard::Client;
use switchboard::transport::stdio::StdioConfig;

#[tokio::main]
async fn main() -> switchboard::Result<()> {
    let mut command: Vec<String> = std::env::args().skip(1).collect();
    if command.is_empty() {
        command = ["npx", "-y", "@modelcontextprotocol/server-everything"]
            .map(String::from)
            .to_vec();
    }
    let program = command.remove(0);
    let client = Client::builder()
        .connect(StdioConfig::new(program).args(command))
        .await?;
    println!(
        "{} ({} era, protocol {})",
        client.server_info().map_or("?", |info| info.name.as_str()),
        client.era(),
        client.protocol_version()
    );
    let tools = client.list_tools().await?;
    for tool in &tools {
        println!(
            "  {}: {}",
            tool.name,
            tool.description.as_deref().unwrap_or("")
        );
    }
    if tools.iter().any(|t| t.name == "echo") {
        let args = serde_json::json!({ "message": "hello from switchboard" });
        let result = client.call_tool("echo", args.as_object().cloned()).await?;
        println!("echo → {:?}", result.content);
    }
    client.close().await;
    Ok(())
}
