//! An MCP host on the official Rust SDK's client (`rmcp`), for interop
//! tests of switchboard's server side: spawns a server over stdio, lists its
//! tools and calls some, as a host no one here wrote would.

use std::process::Stdio;

use rmcp::ServiceExt;
use serde_json::{Map, Value, json};
use tokio::process::Command;

/// Spawns `command` (a prepared stdio server command; stderr is passed
/// through), lists every tool, calls each of `calls` (name and
/// arguments), and returns `{"server": name, "protocol": version,
/// "tools": [names], "calls": {name: result}}`.
///
/// # Errors
/// What failed, as text.
pub async fn list_and_call(
    mut command: Command,
    calls: &[(&str, Map<String, Value>)],
) -> Result<Value, String> {
    command.stderr(Stdio::inherit());
    let (transport, _stderr) = rmcp::transport::TokioChildProcess::builder(command)
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let client = ().serve(transport).await.map_err(|e| format!("initialize: {e}"))?;
    let info = client.peer_info();
    let tools = client
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list: {e}"))?;
    let mut results = Map::new();
    for (name, args) in calls {
        let params =
            rmcp::model::CallToolRequestParams::new(name.to_string()).with_arguments(args.clone());
        let result = client
            .call_tool(params)
            .await
            .map_err(|e| format!("tools/call {name}: {e}"))?;
        results.insert(
            (*name).to_owned(),
            serde_json::to_value(result).map_err(|e| e.to_string())?,
        );
    }
    let answer = json!({
        "server": info.as_ref().and_then(|i| i.server_info.as_ref()).map(|s| s.name.clone()),
        "protocol": info.as_ref().map(|i| i.protocol_version.to_string()),
        "tools": tools.iter().map(|t| t.name.to_string()).collect::<Vec<_>>(),
        "calls": results,
    });
    let _ = client.cancel().await;
    Ok(answer)
}
